package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// spy records every message an actor gets.
type spy struct {
	mu  sync.Mutex
	got []any
}

func (s *spy) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		s.mu.Lock()
		s.got = append(s.got, m)
		s.mu.Unlock()
	}
}

func (s *spy) messages() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]any(nil), s.got...)
}

// dialTLSAs opens a gRPC connection to addr with the certificate pair name
// of certs, as a hand-written client that can say anything.
func dialTLSAs(t *testing.T, certs testCerts, name, addr string) *grpc.ClientConn {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certs.file(name+".crt"), certs.file(name+".key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(certs.file("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// replyChildEnv marks the child process of TestRepliesGoOnlyToTheRequestersNode.
const replyChildEnv = "SLUICE_TEST_REPLY_CHILD"

// Under mutual TLS, mallory (a user of the cluster's CA) announces alice's
// listener address and sends a WhoAmIRequest whose sender is an actor on
// alice's node: the broker must not deliver its answer there. Alice's own
// request is answered as always. Alice's node runs in a test process of
// its own: two protoactor remotes in one process race on gRPC's logger.
func TestRepliesGoOnlyToTheRequestersNode(t *testing.T) {
	if os.Getenv(replyChildEnv) != "" {
		t.Skip("in the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRepliesGoOnlyToTheRequestersNodeChild$", "-test.v", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), replyChildEnv+"=1", testBinEnv+"="+sluiceBin)
	out, err := cmd.CombinedOutput()
	t.Logf("child test:\n%s", out)
	if err != nil {
		t.Fatalf("child test: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestRepliesGoOnlyToTheRequestersNodeChild") {
		t.Fatal("the child test did not run")
	}
}

func TestRepliesGoOnlyToTheRequestersNodeChild(t *testing.T) {
	if os.Getenv(replyChildEnv) == "" {
		t.Skip("run by TestRepliesGoOnlyToTheRequestersNode")
	}
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1"}, certs.brokerFlags(1)...)...)

	alice, err := transport.Start(transport.Config{Host: "127.0.0.1", Security: &transport.Security{Role: transport.RoleClient,
		CertFile: certs.file("user-alice.crt"), KeyFile: certs.file("user-alice.key"), CAFile: certs.file("ca.crt")}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Stop()
	inbox := &spy{}
	spyPID, err := alice.System.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return inbox }), "inbox")
	if err != nil {
		t.Fatal(err)
	}
	// Alice asks first, so the broker has her node's connection already.
	res, err := alice.System.Root.RequestFuture(transport.BrokerPID(b.Addr), &messages.WhoAmIRequest{}, 20*time.Second).Result()
	if who, ok := res.(*messages.WhoAmIResponse); err != nil || !ok || who.Principal != "User:alice" {
		t.Fatalf("alice's own WhoAmI: %v %v", res, err)
	}

	conn := dialTLSAs(t, certs, "user-mallory", b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{
		ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
			ServerConnection: &remote.ServerConnection{SystemId: "mallory", Address: alice.Addr}}}}})
	data, _ := proto.Marshal(&messages.WhoAmIRequest{})
	for i := 0; i < 5; i++ {
		_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
			TypeNames: []string{"sluice.WhoAmIRequest"}, Targets: []*actor.PID{transport.BrokerPID(b.Addr)}, Senders: []*actor.PID{spyPID},
			Envelopes: []*remote.MessageEnvelope{{MessageData: data, Sender: 1}}}}})
	}
	// The broker closes mallory's stream: she does not own that address.
	for err == nil {
		_, err = stream.Recv()
	}
	t.Logf("mallory's stream ended: %v", err)
	// Alice asks again through her inbox: her answer arrives, and it is
	// the only one.
	alice.System.Root.RequestWithCustomSender(transport.BrokerPID(b.Addr), &messages.WhoAmIRequest{}, spyPID)
	deadline := time.Now().Add(20 * time.Second)
	for len(inbox.messages()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, m := range inbox.messages() {
		if who, ok := m.(*messages.WhoAmIResponse); !ok || who.Principal != "User:alice" {
			t.Errorf("alice's node received %T %v", m, m)
		}
	}
	if len(inbox.messages()) == 0 {
		t.Fatal("alice's own request went unanswered")
	}
}
