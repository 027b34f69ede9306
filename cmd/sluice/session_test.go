package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/client"
)

// sessionChildEnv marks the child process of TestClientOverSessions.
const sessionChildEnv = "SLUICE_TEST_SESSION_CHILD"

// With Sessions, a Go client that no broker can connect to works: it
// announces an address where nothing listens (127.0.0.1:1), and admin,
// an idempotent producer, a consumer and a group member all get their
// answers over the connections the client opened. The client runs in a
// test process of its own: two protoactor remotes in one process race on
// gRPC's logger.
// With mutual TLS too, each session bound to the client's principal.
func TestClientOverSessions(t *testing.T) {
	if os.Getenv(sessionChildEnv) != "" {
		t.Skip("in the child")
	}
	for _, mode := range []string{"plaintext", "tls"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestClientOverSessionsChild$", "-test.v", "-test.timeout=3m")
			cmd.Env = append(os.Environ(), sessionChildEnv+"="+mode, testBinEnv+"="+sluiceBin)
			out, err := cmd.CombinedOutput()
			t.Logf("child test:\n%s", out)
			if err != nil {
				t.Fatalf("child test: %v", err)
			}
			if !strings.Contains(string(out), "--- PASS: TestClientOverSessionsChild") {
				t.Fatal("the child test did not run")
			}
		})
	}
}

func TestClientOverSessionsChild(t *testing.T) {
	if os.Getenv(sessionChildEnv) == "" {
		t.Skip("run by TestClientOverSessions")
	}
	flags := []string{"--group-initial-rebalance-delay", "100ms"}
	unreachable := client.Options(client.AdvertisedAddr("127.0.0.1:1"), client.Sessions(true))
	if os.Getenv(sessionChildEnv) == "tls" {
		certs := makeTestCerts(t)
		flags = append(append(flags, "--id", "1"), certs.brokerFlags(1)...)
		unreachable = client.Options(unreachable, client.TLS(certs.file("user-admin.crt"), certs.file("user-admin.key"), certs.file("ca.crt")))
	}
	b := startBroker(t, flags...)
	exerciseClient(t, b.Addr, unreachable, os.Getenv(sessionChildEnv) == "tls")
}

// exerciseClient runs admin, an idempotent producer, a consumer, a group
// member and a push subscriber against the broker at addr with opts.
func exerciseClient(t *testing.T, addr string, opts client.Opt, tls bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admin, err := client.NewAdmin(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(ctx, client.TopicSpec{Name: "far", Partitions: 2}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if who, err := admin.WhoAmI(ctx); err != nil || tls != (who.Principal == "User:admin") {
		t.Fatalf("whoami over the session: %+v %v", who, err)
	}

	p, err := client.NewProducer(addr, opts, client.Acks(client.AllAcks))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		p.Produce(ctx, &client.Record{Topic: "far", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint("v", i))}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if _, off, err := p.ProduceSync(ctx, &client.Record{Topic: "far", Partition: 0, Value: []byte("last")}); err != nil || off < 0 {
		t.Fatalf("produce: %d %v", off, err)
	}
	p.Close()

	c, err := client.NewConsumer(addr, opts, client.ConsumePartitions(map[string]map[int32]client.Offset{
		"far": {0: client.AtStart(), 1: client.AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := 0
	for seen < 51 {
		f := c.PollFetches(ctx)
		if len(f.Errors) > 0 {
			t.Fatalf("consume: %v", f.Errors)
		}
		seen += len(f.Records)
	}

	g, err := client.NewGroupConsumer(addr, "far-group", []string{"far"}, opts, client.AutoCommitInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < 51 {
		f := g.PollFetches(ctx)
		if len(f.Errors) > 0 {
			t.Fatalf("group consume: %v", f.Errors)
		}
		got += len(f.Records)
	}
	if err := g.CommitUncommitted(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	info, err := admin.DescribeGroup(ctx, "far-group")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	for _, part := range info.Partitions {
		committed += part.Committed
	}
	if committed != 51 {
		t.Fatalf("the group committed %d records' offsets, want 51", committed)
	}

	// A push subscriber: the client's own actor, pushed to over the
	// session, grants credit and commits through it.
	system, err := client.System(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := newPushSubscriber(10, time.Millisecond)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return s }))
	sub, err := client.Subscribe(ctx, addr, "far-push", []string{"far"}, pid, opts, client.SubscribeCredit(s.credit))
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	for len(s.processed()) < 51 {
		select {
		case <-ctx.Done():
			t.Fatalf("the subscriber processed %d of 51 records", len(s.processed()))
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.checkCredit(t)
	eventuallyCommitted(t, ctx, admin, "far-push", 51)
	if err := sub.Close(ctx); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}

// eventuallyCommitted waits until group has committed offsets adding up to
// want over its partitions.
func eventuallyCommitted(t *testing.T, ctx context.Context, admin *client.Admin, group string, want int64) {
	t.Helper()
	for {
		info, err := admin.DescribeGroup(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		var committed int64
		for _, part := range info.Partitions {
			committed += part.Committed
		}
		if committed == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s committed %d records' offsets, want %d", group, committed, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
