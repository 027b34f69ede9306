package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// testCerts is a directory of certificates made for one test: a CA,
// brokers 1..3, users admin, alice and mallory, and bad ones: alice's
// certificate expired, and an admin and a broker 3 from a foreign CA.
type testCerts struct{ dir string }

func makeTestCerts(t *testing.T) testCerts {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	from, until := now.Add(-time.Hour), now.Add(24*time.Hour)
	write := func(name string, cert, key []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".crt"), cert, 0o644); err != nil {
			t.Fatal(err)
		}
		if key != nil {
			if err := os.WriteFile(filepath.Join(dir, name+".key"), key, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	ca, err := newDevCA(from, until)
	if err != nil {
		t.Fatal(err)
	}
	write("ca", ca.CertPEM, nil, nil)
	for id := int32(1); id <= 3; id++ {
		c, k, err := ca.issueBroker(id, from, until)
		write(fmt.Sprintf("broker-%d", id), c, k, err)
	}
	for _, u := range []string{"admin", "alice", "mallory"} {
		c, k, err := ca.issueUser(u, from, until)
		write("user-"+u, c, k, err)
	}
	c, k, err := ca.issueUser("alice", now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	write("expired-alice", c, k, err)
	foreign, err := newDevCA(from, until)
	if err != nil {
		t.Fatal(err)
	}
	write("foreign-ca", foreign.CertPEM, nil, nil)
	c, k, err = foreign.issueUser("admin", from, until)
	write("foreign-admin", c, k, err)
	c, k, err = foreign.issueBroker(3, from, until)
	write("foreign-broker-3", c, k, err)
	return testCerts{dir: dir}
}

func (c testCerts) file(name string) string { return filepath.Join(c.dir, name) }

// brokerFlags are the TLS flags of broker id, with User:admin a super user.
func (c testCerts) brokerFlags(id int32) []string {
	return []string{"--tls-cert", c.file(fmt.Sprintf("broker-%d.crt", id)), "--tls-key", c.file(fmt.Sprintf("broker-%d.key", id)),
		"--tls-ca", c.file("ca.crt"), "--super-users", "User:admin"}
}

// as returns the CLI flags that connect with the certificate pair name
// ("user-alice", "foreign-admin", ...), trusting ca ("ca" or "foreign-ca").
func (c testCerts) as(name, ca string) []string {
	return []string{"--tls-cert", c.file(name + ".crt"), "--tls-key", c.file(name + ".key"), "--tls-ca", c.file(ca + ".crt")}
}

// creds is the forgeTLSEnv value for the pair name.
func (c testCerts) creds(name string) string {
	return strings.Join([]string{c.file(name + ".crt"), c.file(name + ".key"), c.file("ca.crt")}, ",")
}

// cli runs a sluice client command against b and returns its output and
// exit code, and how long it took.
func cli(t *testing.T, b *brokerProc, stdin string, flags []string, args ...string) (string, string, int, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBin, append(append(args, "--broker", b.Addr), flags...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("sluice %v did not exit within 40 s:\n%s", args, errOut.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code, took
}

// Clients that cannot prove who they are are refused when they connect,
// with an error that says so, and quickly; the broker serves on.
func TestTLSRefusesBadCredentials(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1"}, certs.brokerFlags(1)...)...)
	cases := []struct {
		name  string
		flags []string
		want  string
	}{
		{"plaintext client", nil, "requires TLS"},
		{"certificate from a foreign CA", certs.as("foreign-admin", "ca"), "SASL_AUTHENTICATION_FAILED"},
		{"expired certificate", certs.as("expired-alice", "ca"), "SASL_AUTHENTICATION_FAILED"},
		{"bad token", []string{"--tls-ca", certs.file("ca.crt"), "--token", "sluice_not-a-token"}, "the token is not valid"},
		{"broker not from the trusted CA", certs.as("user-admin", "foreign-ca"), "SASL_AUTHENTICATION_FAILED"},
		{"CA but neither certificate nor token", []string{"--tls-ca", certs.file("ca.crt")}, "needs a token: pass --token or set SLUICE_TOKEN"},
	}
	for _, tc := range cases {
		_, errOut, code, took := cli(t, b, "", append(tc.flags, "--timeout", "30s"), "topic", "list")
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want a failure naming %q", tc.name, code, errOut, tc.want)
		}
		// Generous: a refused client must not wait out its 30 s timeout.
		if took > 15*time.Second {
			t.Errorf("%s: took %v to fail", tc.name, took)
		}
		t.Logf("%s: %v: %s", tc.name, took.Round(time.Millisecond), strings.TrimSpace(errOut))
	}
	admin := certs.as("user-admin", "ca")
	if _, errOut, code, _ := cli(t, b, "", admin, "topic", "create", "still-serving"); code != 0 {
		t.Fatalf("admin after the refusals: %s", errOut)
	}
	if !strings.Contains(b.logs.String(), "refused a TLS connection") {
		t.Error("the broker did not log the refused handshakes")
	}
	// A broker's certificate must name the broker it runs as.
	out := brokerMustFail(t, append([]string{"broker", "--id", "2", "--data", t.TempDir(), "--addr", fmt.Sprintf("127.0.0.1:%d", freePort(t))},
		certs.brokerFlags(1)...)...)
	if !strings.Contains(out, "names \"Broker:1\", but this is broker 2") {
		t.Errorf("broker 2 with broker 1's certificate: %s", out)
	}
}

// ACLs: each operation needs its right, deny beats allow, prefixes and *
// match as documented, changes apply to the running broker within seconds,
// and token users are principals like certificate users.
func TestACLs(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1"}, certs.brokerFlags(1)...)...)
	admin, alice := certs.as("user-admin", "ca"), certs.as("user-alice", "ca")
	run := func(flags []string, stdin string, args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code, _ := cli(t, b, stdin, flags, args...)
		return out, errOut, code
	}
	must := func(flags []string, stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := run(flags, stdin, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	// expect runs a command as alice (or flags) and checks whether it is
	// allowed; refusals must name the error code want.
	expect := func(flags []string, allowed bool, want, stdin string, args ...string) {
		t.Helper()
		_, errOut, code := run(flags, stdin, args...)
		switch {
		case allowed && code != 0:
			t.Errorf("%v: refused, want allowed: %s", args, errOut)
		case !allowed && (code == 0 || !strings.Contains(errOut, want)):
			t.Errorf("%v: exit %d, stderr %q; want refused with %s", args, code, errOut, want)
		}
	}
	for _, topic := range []string{"orders", "orders-eu", "payments"} {
		must(admin, "", "topic", "create", topic)
		must(admin, "seed\n", "produce", topic)
	}
	const topicDenied, groupDenied, clusterDenied = "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"
	consume := func(topic string, extra ...string) []string {
		return append([]string{"consume", topic, "--from-beginning", "--max", "1"}, extra...)
	}

	// No ACL: nothing is allowed, and no topic is even listed.
	expect(alice, false, topicDenied, "x\n", "produce", "orders")
	expect(alice, false, topicDenied, "", consume("orders")...)
	if out := must(alice, "", "topic", "list"); strings.TrimSpace(out) != "" {
		t.Errorf("alice lists topics she may not describe: %q", out)
	}

	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "write", "--topic", "orders", "--resource-pattern-type", "prefixed")
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--topic", "*")
	must(admin, "", "acl", "add", "--deny-principal", "User:alice", "--operation", "read", "--topic", "payments")
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--group", "g1")
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--group", "team-", "--resource-pattern-type", "prefixed")
	// The change reaches the running broker through the metadata watch.
	applied := time.Now()
	for {
		if _, _, code := run(alice, "x\n", "produce", "orders"); code == 0 {
			break
		}
		if time.Since(applied) > 20*time.Second {
			t.Fatal("alice's new ACLs did not apply within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("ACLs applied after %v", time.Since(applied).Round(time.Millisecond))

	expect(alice, true, "", "x\n", "produce", "orders-eu") // prefix
	expect(alice, false, topicDenied, "x\n", "produce", "payments")
	expect(alice, true, "", "", consume("orders")...)             // read *
	expect(alice, false, topicDenied, "", consume("payments")...) // deny beats *
	expect(alice, true, "", "", "topic", "describe", "orders")    // describe implied by read
	expect(alice, false, topicDenied, "", "topic", "create", "alice-new")
	expect(alice, false, topicDenied, "", "topic", "delete", "orders")
	expect(alice, true, "", "", consume("orders", "--group", "g1")...)
	expect(alice, true, "", "", consume("orders", "--group", "team-blue")...)
	expect(alice, false, groupDenied, "", consume("orders", "--group", "g2")...)
	expect(alice, false, topicDenied, "", consume("payments", "--group", "g1")...)
	expect(alice, true, "", "", "group", "describe", "g1")
	expect(alice, false, groupDenied, "", "group", "describe", "g2")
	expect(alice, false, clusterDenied, "", "acl", "list")
	expect(alice, false, clusterDenied, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "all", "--cluster")
	expect(alice, false, clusterDenied, "", "user", "create", "eve")
	expect(alice, false, clusterDenied, "", "topic", "elect-leaders", "orders")
	must(admin, "", "topic", "elect-leaders") // alter on the cluster: the super user may
	expect(alice, false, clusterDenied, "", "cluster", "reassign", "orders:0=1")
	expect(alice, false, clusterDenied, "", "cluster", "reassignments")
	must(admin, "", "cluster", "reassignments")
	if out := must(alice, "", "topic", "list"); !strings.Contains(out, "payments") || !strings.Contains(out, "orders") {
		// Read on * lets her describe every topic, payments included.
		t.Errorf("alice's topic list: %q", out)
	}

	// Removing the deny lets the * allow through.
	removed := must(admin, "", "acl", "remove", "--deny-principal", "User:alice", "--topic", "payments")
	if !strings.Contains(removed, "removed 1 ACL") {
		t.Errorf("acl remove: %q", removed)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, code := run(alice, "", consume("payments")...); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("removing the deny did not apply within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	list := must(admin, "", "acl", "list", "--principal", "User:alice")
	if strings.Count(list, "User:alice") != 4 || strings.Contains(list, "deny") {
		t.Errorf("alice's ACLs after the removal:\n%s", list)
	}
	for _, line := range strings.Split(strings.TrimSpace(must(admin, "", "acl", "list", "--principal", "User:alice", "--format", "json")), "\n") {
		var a struct {
			Principal, Permission, Operation string
			ResourceType                     string `json:"resource_type"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.Principal != "User:alice" || a.Permission != "allow" || a.Operation == "" || a.ResourceType == "" {
			t.Errorf("acl list --format json: %+v (%v) from %s", a, err, line)
		}
	}

	// Token users.
	out := must(admin, "", "user", "create", "bob")
	outLines := strings.Split(strings.TrimSpace(out), "\n")
	token := strings.TrimSpace(outLines[len(outLines)-1])
	if !strings.HasPrefix(token, "sluice_") {
		t.Fatalf("user create printed %q", out)
	}
	bob := []string{"--tls-ca", certs.file("ca.crt"), "--token", token}
	if who := must(bob, "", "user", "whoami"); !strings.Contains(who, "principal User:bob ") {
		t.Errorf("bob is %q", who)
	}
	expect(bob, false, topicDenied, "x\n", "produce", "orders")
	must(admin, "", "acl", "add", "--allow-principal", "User:bob", "--operation", "write", "--topic", "orders")
	deadline = time.Now().Add(20 * time.Second)
	for {
		if _, _, code := run(bob, "x\n", "produce", "orders"); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's ACL did not apply within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if users := must(admin, "", "user", "list"); !strings.Contains(users, "bob") || strings.Contains(users, token) {
		t.Errorf("user list: %q", users)
	}
	var u struct{ Name, Created string }
	if err := json.Unmarshal([]byte(must(admin, "", "user", "list", "--format", "json")), &u); err != nil || u.Name != "bob" || u.Created == "" {
		t.Errorf("user list --format json: %+v (%v)", u, err)
	}
	must(admin, "", "user", "delete", "bob")
	deadline = time.Now().Add(20 * time.Second)
	for {
		_, errOut, code := run(bob, "", "user", "whoami")
		if code != 0 && strings.Contains(errOut, "the token is not valid") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's token still works after his deletion: %s", errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Bad ACLs are refused with the reason, from the CLI and as forged
	// messages with values no CLI sends; the broker serves on.
	expect(admin, false, "INVALID_REQUEST", "", "acl", "add", "--allow-principal", "alice", "--operation", "read", "--topic", "orders")
	expect(admin, false, "INVALID_REQUEST", "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--topic", "orders", "--resource-pattern-type", "match")
	for _, bad := range []*messages.AclBinding{
		{ResourceType: 99, ResourceName: "orders", PatternType: messages.AclPatternType_ACL_PATTERN_LITERAL, Principal: "User:x", Operation: messages.AclOperation_ACL_OPERATION_READ, Permission: messages.AclPermission_ACL_PERMISSION_ALLOW},
		{ResourceType: messages.AclResourceType_ACL_RESOURCE_TOPIC, ResourceName: "", PatternType: messages.AclPatternType_ACL_PATTERN_PREFIXED, Principal: "User:x", Operation: messages.AclOperation_ACL_OPERATION_READ, Permission: messages.AclPermission_ACL_PERMISSION_ALLOW},
		{ResourceType: messages.AclResourceType_ACL_RESOURCE_GROUP, ResourceName: "g", PatternType: messages.AclPatternType_ACL_PATTERN_LITERAL, Principal: "User:x", Host: "10.0.0.1", Operation: messages.AclOperation_ACL_OPERATION_WRITE, Permission: -3},
	} {
		r := forgeAs(t, certs.creds("user-admin"), b.Addr, "broker", &messages.CreateAclsRequest{Acls: []*messages.AclBinding{bad}})
		if code := responseCode(r); code != messages.ErrorCode_INVALID_REQUEST {
			t.Errorf("CreateAcls %v answered %v", bad, r)
		}
	}
	r := forgeAs(t, certs.creds("user-admin"), b.Addr, "broker", &messages.CreateUserRequest{Name: "eve", TokenSha256: "not-a-hash"})
	if code := responseCode(r); code != messages.ErrorCode_INVALID_REQUEST {
		t.Errorf("CreateUser with a bad hash answered %v", r)
	}
	if _, _, code := run(admin, "", "acl", "list"); code != 0 || !b.alive() {
		t.Fatal("the broker stopped serving after bad ACL requests")
	}

	// Without TLS there are no principals to manage.
	plain := startBroker(t)
	_, errOut, code, _ := cli(t, plain, "", nil, "acl", "list")
	if code == 0 || !strings.Contains(errOut, "SECURITY_DISABLED") {
		t.Errorf("acl list on a plaintext broker: exit %d: %s", code, errOut)
	}
}

// TestSecureCluster runs TestSecureClusterChild in a test process of its
// own: there the harness's clients use TLS, and a second actor system in
// one process would race on gRPC's global logger.
func TestSecureCluster(t *testing.T) {
	if os.Getenv(secureChildEnv) != "" {
		t.Skip("in the child")
	}
	run := "^TestSecureClusterChild$"
	if sub := os.Getenv("SLUICE_TEST_SECURE_RUN"); sub != "" {
		run += "/" + sub // one part, when debugging
	}
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.timeout=8m")
	cmd.Env = append(os.Environ(), secureChildEnv+"=1", testBinEnv+"="+sluiceBin)
	out, err := cmd.CombinedOutput()
	t.Logf("child test:\n%s", out)
	if err != nil {
		t.Fatalf("secure cluster test: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestSecureClusterChild") {
		t.Fatal("the child test did not run")
	}
}

const (
	secureChildEnv = "SLUICE_TEST_SECURE_CHILD"
	testBinEnv     = "SLUICE_TEST_BIN"
)

// TestSecureClusterChild: a three-broker cluster with mutual TLS passes
// the failover workload; replication and control messages forged by a
// client principal are refused and change nothing; a broker with a
// foreign certificate cannot join replication; and no process but a
// broker can answer a client's pending request.
func TestSecureClusterChild(t *testing.T) {
	if os.Getenv(secureChildEnv) == "" {
		t.Skip("run by TestSecureCluster")
	}
	certs := makeTestCerts(t)
	testClientOpts = append(testClientOpts, clientTLS(certs, "user-admin"))
	testBrokerArgs = certs.brokerFlags
	c := startCluster(t, 3)
	c.createTopic(faultTopic, 3, 3, faultConfig)

	t.Run("forged messages from a client principal", func(t *testing.T) {
		produceN(t, c.seeds(), faultTopic, 0, 5)
		c.waitFullyReplicated(faultTopic, time.Minute)
		st := c.partitionState(faultTopic, 0)
		leader := st.Leader
		follower := otherReplica(st, leader)
		leaderAddr := c.brokers[leader].Addr
		hwBefore := leaderHW(c, faultTopic, 0)
		mallory := certs.creds("user-mallory")
		md, _ := c.metadata(faultTopic)
		forgeries := []struct {
			target string
			msg    proto.Message
		}{
			{"broker", &messages.ReplicaFetchRequest{Topic: faultTopic, ReplicaId: follower, LeaderEpoch: st.LeaderEpoch, FetchOffset: 1 << 40, MaxBytes: 1 << 20}},
			{"broker", &messages.OffsetForLeaderEpochRequest{Topic: faultTopic, ReplicaId: follower, CurrentLeaderEpoch: st.LeaderEpoch, Epoch: st.LeaderEpoch}},
			{"broker", &messages.AlterPartitionRequest{Topic: faultTopic, BrokerId: leader, LeaderEpoch: st.LeaderEpoch, NewIsr: []int32{leader}}},
			{"broker", &messages.LeaderAndIsrRequest{ControllerId: c.controller(), ControllerEpoch: controllerEpochOf(t, c),
				States: []*messages.PartitionState{{Topic: faultTopic, TopicId: md.Topics[0].TopicId, Leader: follower, LeaderEpoch: st.LeaderEpoch + 100,
					Isr: []int32{follower}, PartitionEpoch: 1000, Replicas: st.Replicas}}}},
			// Straight to the partition and the controller: the guard refuses the target.
			{fmt.Sprintf("broker/p/%s/0", faultTopic), &messages.ReplicaFetchRequest{Topic: faultTopic, ReplicaId: follower, LeaderEpoch: st.LeaderEpoch, FetchOffset: 1 << 40}},
			{"broker/controller", &messages.AlterPartitionRequest{Topic: faultTopic, BrokerId: leader, LeaderEpoch: st.LeaderEpoch, NewIsr: []int32{leader}}},
		}
		for _, f := range forgeries {
			addr := leaderAddr
			if f.target == "broker/controller" {
				addr = c.brokers[c.controller()].Addr
			}
			r := forgeAs(t, mallory, addr, f.target, f.msg)
			if code := responseCode(r); code != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
				t.Errorf("%s to %s from User:mallory answered %v", proto.MessageName(f.msg), f.target, r)
			}
		}
		after := c.partitionState(faultTopic, 0)
		if after.Leader != leader || after.LeaderEpoch != st.LeaderEpoch || fmt.Sprint(after.Isr) != fmt.Sprint(st.Isr) {
			t.Errorf("partition state moved: %v -> %v", st, after)
		}
		if hw := leaderHW(c, faultTopic, 0); hw != hwBefore {
			t.Errorf("HW moved from %d to %d", hwBefore, hw)
		}
	})

	t.Run("reply path", func(t *testing.T) {
		// The control: a broker's credentials can answer a pending request,
		// so the injection below is a real attempt.
		// Injectors dial as brokers do, so that only the victim's own check
		// can keep them out.
		asBroker := func(name string) string { return certs.creds(name) + ",,broker" }
		if got := injectAnswer(t, c, certs.creds("user-admin"), asBroker("broker-2")); got != injectedHW {
			t.Fatalf("with a broker's certificate the injection did not arrive (HW %d): the test cannot tell", got)
		}
		for name, creds := range map[string]string{"a user's certificate": asBroker("user-mallory"), "no TLS": "",
			"a broker certificate of another CA": asBroker("foreign-broker-3")} {
			if got := injectAnswer(t, c, certs.creds("user-admin"), creds); got == injectedHW {
				t.Errorf("a process with %s delivered an answer to a client's pending request", name)
			}
		}
	})

	t.Run("broker with a foreign certificate", func(t *testing.T) {
		b3 := c.brokers[3]
		b3.stop()
		// Writes go on; broker 3 leaves the ISRs, and must stay out of them
		// for several lag times while they do.
		w := startWorkload(t, c, faultTopic, 1)
		for deadline := time.Now().Add(30 * time.Second); inAnyISR(c, 3); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				md, err := c.metadata(faultTopic)
				w.stop()
				t.Fatalf("broker 3 still in an ISR 30 s after it stopped: %v %v", md, err)
			}
		}
		saved := b3.args
		b3.args = append(append([]string{}, saved...), "--tls-cert", certs.file("foreign-broker-3.crt"), "--tls-key", certs.file("foreign-broker-3.key"),
			"--tls-ca", certs.file("foreign-ca.crt"))
		b3.start()
		start := time.Now()
		for time.Since(start) < 3*4*time.Second {
			if inAnyISR(c, 3) {
				t.Fatal("broker 3 joined an ISR with a foreign certificate")
			}
			time.Sleep(200 * time.Millisecond)
		}
		w.waitAcks(c, 500)
		w.stop()
		if !strings.Contains(c.brokers[c.leaderOf(faultTopic, 0)].logs.String(), "refused a TLS connection") {
			t.Error("the leader did not log the refused broker")
		}
		// With its own certificate again, it catches up and rejoins.
		b3.stop()
		b3.args = saved
		b3.start()
		c.waitFullyReplicated(faultTopic, 2*time.Minute)
	})
	// A push subscriber's actor in this process: records come over the
	// reply path, credit and acks go to its pusher on a client connection.
	t.Run("push subscriber", func(t *testing.T) {
		c.createTopic("secure-push", 2, 3, nil)
		values := produceValues(t, c.seeds(), "secure-push", "v", 300)
		s := newPushSubscriber(20, 100*time.Microsecond)
		spawnSubscriber(t, s, c.seeds(), "secure-pushers", []string{"secure-push"})
		waitFor(t, "every record pushed and processed", func() bool { return missingValues(values, s) == 0 })
		s.checkCredit(t)
	})

	// Last: verify stops every broker to compare their logs.
	t.Run("failover workload", func(t *testing.T) {
		// A topic of its own: the workload above wrote the same values.
		const failoverTopic = "secure-faults"
		c.createTopic(failoverTopic, 3, 3, faultConfig)
		hw := startHWMonitor(c, failoverTopic)
		w := startWorkload(t, c, failoverTopic, 2)
		w.waitAcks(c, 2000)
		leader := c.leaderOf(failoverTopic, 0)
		c.brokers[leader].kill9()
		c.probeProduce(failoverTopic, 0)
		w.waitAcks(c, 2000)
		c.brokers[leader].start()
		w.waitAcks(c, 2000)
		c.verify(failoverTopic, 3, w, hw)
	})
}

// clientTLS is the client option of the pair name.
func clientTLS(certs testCerts, name string) client.Opt {
	return client.TLS(certs.file(name+".crt"), certs.file(name+".key"), certs.file("ca.crt"))
}

func leaderHW(c *testCluster, topic string, p int32) int64 {
	leader := c.leaderOf(topic, p)
	for _, rs := range c.replicaStates(topic)[leader] {
		if rs.Partition == p {
			return rs.HighWatermark
		}
	}
	return -1
}

func inAnyISR(c *testCluster, id int32) bool {
	md, err := c.metadata(faultTopic)
	if err != nil || len(md.Topics) != 1 {
		return true // cannot tell: not out
	}
	for _, p := range md.Topics[0].Partitions {
		for _, r := range p.Isr {
			if r == id {
				return true
			}
		}
	}
	return false
}

// responseCode is the error code of any answer.
func responseCode(m proto.Message) messages.ErrorCode {
	type coded interface{ GetError() messages.ErrorCode }
	if c, ok := m.(coded); ok {
		return c.GetError()
	}
	return messages.ErrorCode_NONE
}

// Reply injection: a victim process with a fetch parked at the leader, and
// an injector that sends a made-up answer to the victim's future.
const (
	victimEnv  = "SLUICE_TEST_VICTIM"
	injectEnv  = "SLUICE_TEST_INJECT"
	injectedHW = 424242
)

// A broker takes new CA certificates without a restart: when the file
// changes, and on SIGHUP.
func TestTLSReloadsCertificates(t *testing.T) {
	certs := makeTestCerts(t)
	caFile := filepath.Join(t.TempDir(), "broker-ca.pem")
	ours, err := os.ReadFile(certs.file("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := os.ReadFile(certs.file("foreign-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	writeCA := func(pems ...[]byte) {
		t.Helper()
		tmp := caFile + ".tmp"
		if err := os.WriteFile(tmp, bytes.Join(pems, nil), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, caFile); err != nil {
			t.Fatal(err)
		}
	}
	writeCA(ours)
	b := startBroker(t, "--id", "1", "--tls-cert", certs.file("broker-1.crt"), "--tls-key", certs.file("broker-1.key"),
		"--tls-ca", caFile, "--super-users", "User:admin")
	// The foreign CA's admin (trusting our CA for the broker's certificate).
	outsider := certs.as("foreign-admin", "ca")
	accepted := func() bool {
		_, _, code, _ := cli(t, b, "", outsider, "topic", "list")
		return code == 0
	}
	if accepted() {
		t.Fatal("a certificate of an untrusted CA was accepted")
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > 20*time.Second {
				t.Fatalf("%s: not within 20 s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
	}
	writeCA(ours, foreign)
	waitUntil("the changed CA file taken", accepted)
	// SIGHUP reads the files at once.
	writeCA(ours)
	b.signal(syscall.SIGHUP)
	waitUntil("the CA file read again on SIGHUP", func() bool { return !accepted() })
	if !strings.Contains(b.logs.String(), "SIGHUP: TLS files reloaded") {
		t.Error("the broker did not log the SIGHUP reload")
	}
	if _, errOut, code, _ := cli(t, b, "", certs.as("user-admin", "ca"), "topic", "list"); code != 0 {
		t.Fatalf("our own admin after the reloads: %s", errOut)
	}
}
