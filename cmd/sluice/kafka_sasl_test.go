package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// With --kafka-sasl a Kafka client without a certificate logs in with
// SASL PLAIN over TLS (SASL_SSL): the user name and, as the password, the
// token `sluice user create` printed. The login names the principal the
// ACLs check; a wrong password is SASL_AUTHENTICATION_FAILED after a
// delay, and a client that does not log in gets nothing. Clients with a
// certificate need no login.
func TestKafkaSASLPlain(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1", "--kafka-addr", "127.0.0.1:0", "--kafka-sasl"}, certs.brokerFlags(1)...)...)
	addr := kafkaAddr(t, b)
	admin := append([]string{"--broker", b.Addr}, certs.as("user-admin", "ca")...)
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, "", append(args, admin...)...)
		if code != 0 {
			t.Fatalf("sluice %v: %s%s", args, out, errOut)
		}
		return out
	}
	run("topic", "create", "orders")
	run("topic", "create", "payments")
	run("acl", "add", "--allow-principal", "User:alice", "--operation", "write,read,describe", "--topic", "orders")
	lines := strings.Split(strings.TrimSpace(run("user", "create", "alice")), "\n")
	token := strings.TrimSpace(lines[len(lines)-1])

	serverOnly := serverOnlyTLS(t, certs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	alice := newKgo(t, addr, serverOnly, kgo.SASL(plain.Auth{User: "alice", Pass: token}.AsMechanism()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(2), kgo.RetryTimeout(5*time.Second))
	eventually(t, 20*time.Second, func() string { // the user and the ACL reach the broker
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("by alice")}).FirstErr(); err != nil {
			return "alice writing orders: " + err.Error()
		}
		return ""
	})
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice writing payments: %v", err)
	}
	// A broker's settings need DescribeConfigs on the cluster, a topic's
	// DescribeConfigs on the topic (Describe is not enough), as Kafka.
	if described, err := kadm.NewClient(alice).DescribeBrokerConfigs(ctx, 1); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice describing broker 1's settings: %v %+v", err, described)
	}
	if described, err := kadm.NewClient(alice).DescribeTopicConfigs(ctx, "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) &&
		(len(described) != 1 || !errors.Is(described[0].Err, kerr.TopicAuthorizationFailed)) {
		t.Errorf("alice describing orders' configs without DescribeConfigs on it: %v %+v", err, described)
	}

	// Another user's token, a wrong one: refused, after a delay.
	for name, auth := range map[string]plain.Auth{
		"a wrong password":         {User: "alice", Pass: "sluice_wrong"},
		"alice's token as mallory": {User: "mallory", Pass: token},
	} {
		cl := newKgo(t, addr, serverOnly, kgo.SASL(auth.AsMechanism()), kgo.RetryTimeout(2*time.Second))
		start := time.Now()
		_, err := kadm.NewClient(cl).ListTopics(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || time.Since(start) < time.Second {
			t.Errorf("%s: %v after %v", name, err, time.Since(start))
		}
	}
	// librdkafka logs in with PLAIN too.
	if md := kcatList(t, needTool(t, "kcat"), addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=PLAIN",
		"-X", "sasl.username=alice", "-X", "sasl.password="+token, "-X", "ssl.ca.location="+certs.file("ca.crt")); len(md.Brokers) != 1 {
		t.Errorf("kcat with PLAIN: %+v", md)
	}
	// No login and no certificate: nothing is served.
	anon := newKgo(t, addr, serverOnly, kgo.RetryTimeout(2*time.Second))
	if _, err := kadm.NewClient(anon).ListTopics(ctx); err == nil {
		t.Error("a client that did not log in listed topics")
	}
	eventually(t, 10*time.Second, func() string {
		if logs := b.logs.String(); !strings.Contains(logs, "a request before the SASL login") || !strings.Contains(logs, "kafka SASL login refused") {
			return "the refusals were not logged"
		}
		return ""
	})
	// A certificate still works without a login.
	adm := newKgo(t, addr, kafkaTLS(t, certs, "user-admin", "ca"))
	if topics, err := kadm.NewClient(adm).ListTopics(ctx); err != nil || !topics.Has("payments") {
		t.Errorf("the admin's certificate: %v %v", topics.Names(), err)
	}
	if described, err := kadm.NewClient(adm).DescribeBrokerConfigs(ctx, 1); err != nil || len(described) != 1 || described[0].Err != nil {
		t.Errorf("the admin describing broker 1's settings: %v %+v", err, described)
	}
	if described, err := kadm.NewClient(adm).DescribeTopicConfigs(ctx, "orders"); err != nil || len(described) != 1 || described[0].Err != nil {
		t.Errorf("the admin describing orders' configs: %v %+v", err, described)
	}
}

// SASL SCRAM over TLS: `sluice user password` and kadm's
// AlterUserSCRAMCredentials set passwords (only derived keys are stored),
// DescribeUserSCRAMCredentials and `sluice user list` show them;
// franz-go, kcat and confluent-kafka (Python) log in with SCRAM-SHA-256
// and SCRAM-SHA-512; a wrong password, a removed one and a user without
// one are SASL_AUTHENTICATION_FAILED.
func TestKafkaSASLScram(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1", "--kafka-addr", "127.0.0.1:0", "--kafka-sasl"}, certs.brokerFlags(1)...)...)
	addr := kafkaAddr(t, b)
	admin := append([]string{"--broker", b.Addr}, certs.as("user-admin", "ca")...)
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, stdin, append(args, admin...)...)
		if code != 0 {
			t.Fatalf("sluice %v: %s%s", args, out, errOut)
		}
		return out
	}
	run("", "topic", "create", "orders")
	for _, user := range []string{"alice", "bob"} {
		run("", "acl", "add", "--allow-principal", "User:"+user, "--operation", "write,read,describe", "--topic", "orders")
	}
	run("wonderland\n", "user", "password", "alice")
	if _, errOut, code := runCLI(t, "x\n", append([]string{"user", "password", "alice", "--iterations", "100"}, admin...)...); code != 2 || !strings.Contains(errOut, "4096") {
		t.Errorf("100 iterations: exit %d: %s", code, errOut)
	}

	serverOnly := serverOnlyTLS(t, certs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	produce := func(mech sasl.Mechanism) error {
		cl := newKgo(t, addr, serverOnly, kgo.SASL(mech), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.RecordRetries(2), kgo.RetryTimeout(3*time.Second))
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("by " + mech.Name())}).FirstErr()
	}
	// login asks once, without retries: each refusal is one refusal.
	login := func(mech sasl.Mechanism) error {
		cl := newKgo(t, addr, serverOnly, kgo.SASL(mech), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		defer cl.Close()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	alice := scram.Auth{User: "alice", Pass: "wonderland"}
	eventually(t, 20*time.Second, func() string { // the password and the ACL reach the broker
		if err := produce(alice.AsSha512Mechanism()); err != nil {
			return "alice with SCRAM-SHA-512: " + err.Error()
		}
		return ""
	})
	if err := produce(alice.AsSha256Mechanism()); err != nil {
		t.Errorf("alice with SCRAM-SHA-256: %v", err)
	}

	// kadm, with the admin's certificate, sets bob's password and lists both.
	admClient := newKgo(t, addr, kafkaTLS(t, certs, "user-admin", "ca"))
	adm := kadm.NewClient(admClient)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "builder"}})
	if err != nil || altered.AllFailed() || altered["bob"].Err != nil {
		t.Fatalf("kadm AlterUserSCRAMs: %v %v", altered, err)
	}
	// kadm refuses too few iterations itself: the request, sent raw.
	few := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	few.Upsertions = append(few.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: "carol", Mechanism: 1, Iterations: 100,
		Salt: []byte("salt"), SaltedPassword: make([]byte, 32)})
	if resp, err := few.RequestWith(ctx, admClient); err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Errorf("100 iterations: %+v %v", resp, err)
	}
	bob := scram.Auth{User: "bob", Pass: "builder"}
	eventually(t, 20*time.Second, func() string {
		if err := produce(bob.AsSha512Mechanism()); err != nil {
			return "bob with SCRAM-SHA-512: " + err.Error()
		}
		return ""
	})
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(described["alice"].CredInfos) != 2 || len(described["bob"].CredInfos) != 1 || described["bob"].CredInfos[0].Iterations != 4096 {
		t.Errorf("kadm DescribeUserSCRAMs: %+v %v", described, err)
	}

	// librdkafka: kcat and confluent-kafka log in with SCRAM-SHA-512 over TLS.
	kcat := needTool(t, "kcat")
	rdkafka := []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice",
		"-X", "sasl.password=wonderland", "-X", "ssl.ca.location=" + certs.file("ca.crt")}
	if md := kcatList(t, kcat, addr, rdkafka...); len(md.Topics) == 0 {
		t.Errorf("kcat with SCRAM-SHA-512 listed no topics")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import confluent_kafka").Run(); err == nil {
		script := `
import sys, confluent_kafka
p = confluent_kafka.Producer({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
    "sasl.username": "bob", "sasl.password": "builder", "ssl.ca.location": sys.argv[2]})
done = []
p.produce("orders", b"by confluent-kafka", on_delivery=lambda err, msg: done.append(err))
p.flush(30)
print("OK" if done == [None] else "FAILED %r" % done)
`
		if out, err := exec.Command("/usr/bin/python3", "-c", script, addr, certs.file("ca.crt")).CombinedOutput(); err != nil || !strings.Contains(string(out), "OK") {
			t.Errorf("confluent-kafka with SCRAM-SHA-512: %v\n%s", err, out)
		}
	} else if os.Getenv("SLUICE_REQUIRE_TOOLS") != "" {
		t.Errorf("python3-confluent-kafka is not installed: %v", err)
	}

	run("", "user", "password", "alice", "--delete", "--mechanism", "SCRAM-SHA-256")
	eventually(t, 20*time.Second, func() string {
		if err := login(alice.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			return fmt.Sprintf("alice's removed SCRAM-SHA-256 password: %v", err)
		}
		return ""
	})
	type listedUser struct {
		Name      string
		Token     bool
		Passwords []struct{ Mechanism string }
	}
	var listed []listedUser
	for _, line := range strings.Split(strings.TrimSpace(run("", "user", "list", "--format", "json")), "\n") {
		var u listedUser
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatal(err)
		}
		listed = append(listed, u)
	}
	if len(listed) != 2 || listed[0].Name != "alice" || listed[0].Token || len(listed[0].Passwords) != 1 ||
		listed[0].Passwords[0].Mechanism != "SCRAM-SHA-512" || listed[1].Name != "bob" {
		t.Errorf("user list: %+v", listed)
	}

	// Wrong and missing passwords (last: each refusal lengthens the next one's delay).
	for name, mech := range map[string]sasl.Mechanism{
		"a wrong password":        scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism(),
		"bob's password as alice": scram.Auth{User: "alice", Pass: "builder"}.AsSha512Mechanism(),
		"a user without one":      scram.Auth{User: "ghost", Pass: "wonderland"}.AsSha512Mechanism(),
	} {
		if err := login(mech); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if out, err := exec.Command(kcat, "-L", "-b", addr, "-m", "15", "-X", "security.protocol=SASL_SSL",
		"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=wrong",
		"-X", "ssl.ca.location="+certs.file("ca.crt")).CombinedOutput(); err == nil || !strings.Contains(string(out), "uthentication") {
		t.Errorf("kcat with a wrong password: %v\n%s", err, out)
	}
}

// serverOnlyTLS is TLS that checks the broker's certificate and presents
// none: a client that logs in with SASL.
func serverOnlyTLS(t *testing.T, certs testCerts) kgo.Opt {
	t.Helper()
	pem, err := os.ReadFile(certs.file("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
}

// SASL_PLAINTEXT with session lifetimes (KIP-368): clients log in with
// SCRAM without TLS (PLAIN is not offered: it would send a token in
// clear), log in again on their connection before each session ends, and
// a removed password stops an open connection at its next login.
func TestKafkaSASLPlaintextSessions(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1", "--kafka-addr", "127.0.0.1:0", "--kafka-security-protocol", "SASL_PLAINTEXT",
		"--kafka-sasl-session-lifetime", "2s"}, certs.brokerFlags(1)...)...)
	addr := kafkaAddr(t, b)
	admin := append([]string{"--broker", b.Addr}, certs.as("user-admin", "ca")...)
	for _, args := range [][]string{
		{"topic", "create", "orders"},
		{"acl", "add", "--allow-principal", "User:alice", "--operation", "write,read,describe", "--topic", "orders"},
		{"user", "password", "alice", "--mechanism", "SCRAM-SHA-256"},
	} {
		if out, errOut, code := runCLI(t, "wonderland\n", append(args, admin...)...); code != 0 {
			t.Fatalf("sluice %v: %s%s", args, out, errOut)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var connects atomic.Int32
	alice := newKgo(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "wonderland"}.AsSha256Mechanism()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(1), kgo.RetryTimeout(3*time.Second),
		kgo.WithHooks(kafkaConnectHook{&connects}))
	produce := func(i int) error {
		return alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))}).FirstErr()
	}
	eventually(t, 20*time.Second, func() string { // the password and the ACL reach the broker
		if err := produce(0); err != nil {
			return "alice: " + err.Error()
		}
		return ""
	})
	// Three session lifetimes of producing: logins again keep the
	// connections (one to bootstrap, one to the broker as itself).
	before := connects.Load()
	for i, start := 1, time.Now(); time.Since(start) < 6*time.Second; i++ {
		if err := produce(i); err != nil {
			t.Fatalf("record %d, %v after the first: %v", i, time.Since(start), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := connects.Load(); n != before {
		t.Errorf("%d new connections over three session lifetimes: sessions were not renewed in place", n-before)
	}
	if logs := b.logs.String(); strings.Contains(logs, "its SASL session ended") {
		t.Error("a connection was closed for its session's end")
	}

	// PLAIN is not offered in clear; librdkafka logs in with SCRAM.
	plainCl := newKgo(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "sluice_x"}.AsMechanism()), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, plainCl); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Errorf("PLAIN over plaintext: %v", err)
	}
	if md := kcatList(t, needTool(t, "kcat"), addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "sasl.username=alice", "-X", "sasl.password=wonderland"); len(md.Brokers) != 1 {
		t.Errorf("kcat over SASL_PLAINTEXT: %+v", md)
	}

	// The password removed: the open connection fails at its next login.
	if out, errOut, code := runCLI(t, "", append([]string{"user", "password", "alice", "--delete", "--mechanism", "SCRAM-SHA-256"}, admin...)...); code != 0 {
		t.Fatalf("removing the password: %s%s", out, errOut)
	}
	removed := time.Now()
	for i := 0; ; i++ {
		err := produce(1000 + i)
		if errors.Is(err, kerr.SaslAuthenticationFailed) {
			break
		}
		if time.Since(removed) > 20*time.Second {
			t.Fatalf("alice still produces %v after her password was removed: %v", time.Since(removed), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the open connection's login failed %v after the password was removed", time.Since(removed).Round(time.Millisecond))
}

type kafkaConnectHook struct{ n *atomic.Int32 }

func (h kafkaConnectHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.n.Add(1)
	}
}

// OAUTHBEARER with --kafka-oauth-jwks: a JWT signed by the identity
// provider's key logs in as User:SUB and the ACLs of that principal apply;
// a token of another key, an expired one or one for another audience is
// SASL_AUTHENTICATION_FAILED. A JWKS file that cannot be read stops the
// broker at start.
func TestKafkaOAuthBearer(t *testing.T) {
	idp, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "idp-1", "use": "sig", "n": enc(idp.N.Bytes()), "e": enc(big.NewInt(int64(idp.E)).Bytes())}}})
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	sign := func(key *rsa.PrivateKey, claims map[string]any) string {
		header, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "idp-1", "typ": "JWT"})
		body, _ := json.Marshal(claims)
		signed := enc(header) + "." + enc(body)
		digest := sha256.Sum256([]byte(signed))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		return signed + "." + enc(sig)
	}

	certs := makeTestCerts(t)
	if _, errOut, code := runCLI(t, "", append([]string{"broker", "--id", "1", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--kafka-addr", "127.0.0.1:0",
		"--kafka-security-protocol", "SASL_PLAINTEXT", "--kafka-oauth-jwks", filepath.Join(t.TempDir(), "missing.json")}, certs.brokerFlags(1)...)...); code != 2 ||
		!strings.Contains(errOut, "--kafka-oauth-jwks") {
		t.Errorf("a missing JWKS file: exit %d: %s", code, errOut)
	}
	b := startBroker(t, append([]string{"--id", "1", "--kafka-addr", "127.0.0.1:0", "--kafka-security-protocol", "SASL_PLAINTEXT",
		"--kafka-oauth-jwks", jwksFile, "--kafka-oauth-audience", "sluice"}, certs.brokerFlags(1)...)...)
	addr := kafkaAddr(t, b)
	for _, args := range [][]string{
		{"topic", "create", "orders"},
		{"topic", "create", "payments"},
		{"acl", "add", "--allow-principal", "User:alice", "--operation", "write,describe", "--topic", "orders"},
	} {
		if out, errOut, code := runCLI(t, "", append(args, append([]string{"--broker", b.Addr}, certs.as("user-admin", "ca")...)...)...); code != 0 {
			t.Fatalf("sluice %v: %s%s", args, out, errOut)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "alice", "aud": "sluice", "exp": time.Now().Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	produce := func(token, topic string) error {
		cl := newKgo(t, addr, kgo.SASL(oauth.Auth{Token: token}.AsMechanism()), kgo.RecordRetries(1), kgo.RetryTimeout(3*time.Second))
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	alice := sign(idp, claims(nil))
	eventually(t, 20*time.Second, func() string { // the ACL reaches the broker
		if err := produce(alice, "orders"); err != nil {
			return "alice writing orders: " + err.Error()
		}
		return ""
	})
	if err := produce(alice, "payments"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice writing payments: %v", err)
	}
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range map[string]string{
		"another key":      sign(forger, claims(nil)),
		"expired":          sign(idp, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
		"another audience": sign(idp, claims(func(c map[string]any) { c["aud"] = "kafka" })),
	} {
		cl := newKgo(t, addr, kgo.SASL(oauth.Auth{Token: token}.AsMechanism()), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
