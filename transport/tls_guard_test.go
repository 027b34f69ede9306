package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// The guard's side of TLS: principals from certificates and tokens, and
// pinning a token client's reply listener to its connection.

// tlsPeerContext is what gRPC gives a stream handler on a TLS connection.
func tlsPeerContext(certs []*x509.Certificate, token ...string) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{
		Addr:     &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 40000},
		AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: certs}},
	})
	if len(token) > 0 {
		md := metadata.MD{}
		for _, tk := range token {
			md.Append("authorization", "Bearer "+tk)
		}
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	return ctx
}

func TestGuardAuthenticate(t *testing.T) {
	p := newTestPKI(t)
	users := func(token string) (string, bool) {
		if token == "s3cret" {
			return "User:tok", true
		}
		return "", false
	}
	g := &guard{logger: discardLogger(), stats: &GuardStats{}, tls: newState(t, Security{Role: RoleBroker, Authenticate: users}, p.ca, &p.broker1)}
	noTokens := &guard{logger: discardLogger(), stats: &GuardStats{}, tls: newState(t, Security{Role: RoleBroker}, p.ca, &p.broker1)}
	clientGuard := &guard{logger: discardLogger(), stats: &GuardStats{}, tls: newState(t, Security{Role: RoleClient, Authenticate: users}, p.ca, &p.alice)}
	certs := func(c ...*x509.Certificate) []*x509.Certificate { return c }

	for _, tc := range []struct {
		name      string
		g         *guard
		ctx       context.Context
		principal string
		pin       *x509.Certificate
	}{
		{"broker cert", g, tlsPeerContext(certs(p.broker2.leaf)), "Broker:2", nil},
		{"user cert", g, tlsPeerContext(certs(p.alice.leaf)), "User:alice", nil},
		// A certificate from the CA wins over whatever token comes with it.
		{"user cert and token", g, tlsPeerContext(certs(p.alice.leaf), "s3cret"), "User:alice", nil},
		{"CN-only cert", g, tlsPeerContext(certs(p.cnOnly.leaf)), "User:carol", nil},
		{"ephemeral and token", g, tlsPeerContext(certs(p.ephemeralLeaf), "s3cret"), "User:tok", p.ephemeralLeaf},
		{"plaintext node", &guard{}, context.Background(), AnonymousPrincipal, nil},
	} {
		principal, pin, err := tc.g.authenticate(tc.ctx)
		if err != nil || principal != tc.principal || pin != tc.pin {
			t.Errorf("%s: %q pin %v err %v, want %q pin %v", tc.name, principal, pin != nil, err, tc.principal, tc.pin != nil)
		}
	}

	for _, tc := range []struct {
		name string
		g    *guard
		ctx  context.Context
		why  string
	}{
		{"ephemeral, bad token", g, tlsPeerContext(certs(p.ephemeralLeaf), "guess"), "not valid"},
		{"ephemeral, no token", g, tlsPeerContext(certs(p.ephemeralLeaf)), "neither"},
		{"ephemeral, empty token", g, tlsPeerContext(certs(p.ephemeralLeaf), ""), "neither"},
		{"ephemeral, two tokens", g, tlsPeerContext(certs(p.ephemeralLeaf), "s3cret", "s3cret"), "neither"},
		{"ephemeral, tokens refused", noTokens, tlsPeerContext(certs(p.ephemeralLeaf), "s3cret"), "does not accept tokens"},
		{"ephemeral to a client", clientGuard, tlsPeerContext(certs(p.ephemeralLeaf), "s3cret"), "not accepted"},
		{"foreign CA", g, tlsPeerContext(certs(p.foreignAlice.leaf), "s3cret"), "unknown authority"},
		{"self-signed with token", g, tlsPeerContext(certs(p.selfSigned.leaf), "s3cret"), "unknown authority"},
		{"no certificate", g, tlsPeerContext(nil), "certificate is required"},
		{"no peer", g, context.Background(), "no peer"},
		{"not TLS", g, peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{}}), "not TLS"},
	} {
		principal, pin, err := tc.g.authenticate(tc.ctx)
		wantErr(t, tc.name, err, tc.why)
		if principal != "" || pin != nil {
			t.Errorf("%s: refused but returned %q, pin %v", tc.name, principal, pin != nil)
		}
	}
}

// fakeStream replays messages to the guard as gRPC would.
type fakeStream struct {
	grpc.ServerStream // nil: only Context and RecvMsg are used
	ctx               context.Context
	msgs              []*remote.RemoteMessage
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) RecvMsg(m any) error {
	if len(f.msgs) == 0 {
		return io.EOF
	}
	proto.Merge(m.(*remote.RemoteMessage), f.msgs[0])
	f.msgs = f.msgs[1:]
	return nil
}

func connectRequest(addr string) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{
		ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
			ServerConnection: &remote.ServerConnection{SystemId: "test", Address: addr}}}}}
}

func batchMessage(b *remote.MessageBatch) *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}
}

// The guard pins a token client's certificate to the address of its first
// ConnectRequest while its stream lasts, and restricts what it may send.
func TestGuardStreamPinsTokenClient(t *testing.T) {
	p := newTestPKI(t)
	users := func(token string) (string, bool) { return "User:tok", token == "s3cret" }
	g := &guard{logger: discardLogger(), stats: &GuardStats{}, tls: newState(t, Security{Role: RoleBroker, Authenticate: users}, p.ca, &p.broker1)}
	const addr = "10.0.0.5:7000"
	var proved []string
	g.prove = func(_ context.Context, a, principal string, eph *x509.Certificate) error {
		if principal != "User:tok" || eph != p.ephemeralLeaf {
			t.Errorf("proof asked for %s with %v", principal, eph)
		}
		proved = append(proved, a)
		return nil
	}
	controller := systemBatch(t, actor.NewPID("10.0.0.1:9470", ControllerActorName), &messages.MetadataRequest{})
	fs := &fakeStream{ctx: tlsPeerContext([]*x509.Certificate{p.ephemeralLeaf}, "s3cret"), msgs: []*remote.RemoteMessage{
		connectRequest(addr),
		connectRequest("10.0.0.6:7000"), // a second introduction changes nothing
		batchMessage(controller),
	}}
	var seen []*remote.RemoteMessage
	handler := func(srv any, ss grpc.ServerStream) error {
		for {
			m := &remote.RemoteMessage{}
			if err := ss.RecvMsg(m); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			seen = append(seen, m)
			if !g.tls.pinned(addr, p.ephemeralLeaf) {
				t.Errorf("message %d: the certificate is not pinned to %s", len(seen), addr)
			}
			if g.tls.pinned("10.0.0.6:7000", p.ephemeralLeaf) {
				t.Error("a second ConnectRequest moved the pin")
			}
		}
	}
	if err := g.stream(nil, fs, &grpc.StreamServerInfo{}, handler); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("handler saw %d messages", len(seen))
	}
	if len(proved) != 1 || proved[0] != addr {
		t.Errorf("listeners proved: %v, want %s once", proved, addr)
	}
	if g.tls.pinned(addr, p.ephemeralLeaf) {
		t.Error("the pin outlived the stream")
	}
	b := seen[2].GetMessageBatch()
	im := invalidAt(t, b, 0)
	if im == nil || im.Error != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
		t.Errorf("a token client reached the controller: %v", im)
	}
	if h := b.Envelopes[0].MessageHeader.GetHeaderData(); h[PrincipalHeader] != "User:tok" || h[PeerHeader] != "10.0.0.5:40000" {
		t.Errorf("headers %v", h)
	}
	if g.stats.Replaced() != 1 {
		t.Errorf("replaced %d", g.stats.Replaced())
	}

	// A bad token is refused before the handler runs.
	bad := &fakeStream{ctx: tlsPeerContext([]*x509.Certificate{p.ephemeralLeaf}, "guess"), msgs: []*remote.RemoteMessage{connectRequest(addr)}}
	called := false
	err := g.stream(nil, bad, &grpc.StreamServerInfo{}, func(any, grpc.ServerStream) error { called = true; return nil })
	if status.Code(err) != codes.Unauthenticated || called {
		t.Errorf("bad token: %v, handler called %v", err, called)
	}
	if g.stats.Unauthenticated() != 1 {
		t.Errorf("unauthenticated %d", g.stats.Unauthenticated())
	}

	// A broker's stream is not restricted.
	fs = &fakeStream{ctx: tlsPeerContext([]*x509.Certificate{p.broker2.leaf}), msgs: []*remote.RemoteMessage{
		connectRequest("10.0.0.2:9470"), batchMessage(systemBatch(t, actor.NewPID("10.0.0.1:9470", ControllerActorName), &messages.MetadataRequest{}))}}
	seen = nil
	err = g.stream(nil, fs, &grpc.StreamServerInfo{}, func(_ any, ss grpc.ServerStream) error {
		for {
			m := &remote.RemoteMessage{}
			if err := ss.RecvMsg(m); err != nil {
				return nil
			}
			seen = append(seen, m)
		}
	})
	if err != nil || len(seen) != 2 {
		t.Fatalf("broker stream: %v, %d messages", err, len(seen))
	}
	if im := invalidAt(t, seen[1].GetMessageBatch(), 0); im != nil {
		t.Errorf("a broker's message to the controller was refused: %v", im)
	}
	g.tls.pinMu.Lock()
	defer g.tls.pinMu.Unlock()
	if len(g.tls.pins) != 0 {
		t.Errorf("pins left: %v", g.tls.pins)
	}
}
