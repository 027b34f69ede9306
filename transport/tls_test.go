package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/sluicemq/sluice/internal/testutil"
)

// testTimeout bounds every wait in these tests: a broken handshake must
// fail the test, not hang it.
const testTimeout = 10 * time.Second

// certSpec describes a certificate to issue.
type certSpec struct {
	cn       string
	uris     []string
	notAfter time.Time // zero: a day from now
	ekus     []x509.ExtKeyUsage
}

// issued is a certificate with its key, parsed and as PEM.
type issued struct {
	leaf    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// makeCert signs spec with parent (self-signed when parent is nil).
func makeCert(t *testing.T, spec certSpec, parent *issued, isCA bool) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	notAfter := spec.notAfter
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	ekus := spec.ekus
	if ekus == nil {
		ekus = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.cn},
		NotBefore:    notAfter.Add(-48 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  ekus,
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage = nil
	}
	for _, s := range spec.uris {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.leaf, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return issued{
		leaf:    leaf,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// testPKI is the cluster CA, a foreign CA and one certificate of every kind
// the checks tell apart.
type testPKI struct {
	ca, foreign                   issued
	broker1, broker2              issued
	alice, expired, foreignAlice  issued
	cnOnly, noName, selfSigned    issued
	ephemeral                     *tls.Certificate
	ephemeralLeaf, ephemeral2Leaf *x509.Certificate
	ephemeral2                    *tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{}
	p.ca = makeCert(t, certSpec{cn: "sluice test CA"}, nil, true)
	p.foreign = makeCert(t, certSpec{cn: "foreign CA"}, nil, true)
	p.broker1 = makeCert(t, certSpec{cn: "broker-1", uris: []string{"sluice://broker/1"}}, &p.ca, false)
	p.broker2 = makeCert(t, certSpec{cn: "broker-2", uris: []string{"sluice://broker/2"}}, &p.ca, false)
	p.alice = makeCert(t, certSpec{cn: "alice", uris: []string{"sluice://user/alice"}}, &p.ca, false)
	p.expired = makeCert(t, certSpec{cn: "alice", uris: []string{"sluice://user/alice"}, notAfter: time.Now().Add(-time.Hour)}, &p.ca, false)
	p.foreignAlice = makeCert(t, certSpec{cn: "alice", uris: []string{"sluice://user/alice"}}, &p.foreign, false)
	p.cnOnly = makeCert(t, certSpec{cn: "carol"}, &p.ca, false)
	p.noName = makeCert(t, certSpec{}, &p.ca, false)
	// Self-signed with a principal but without the ephemeral mark: it proves
	// nothing, and must not pass for a token client's certificate either.
	p.selfSigned = makeCert(t, certSpec{cn: "mallory", uris: []string{"sluice://broker/1"}}, nil, false)
	var err error
	if p.ephemeral, err = ephemeralCertificate(); err != nil {
		t.Fatal(err)
	}
	if p.ephemeral2, err = ephemeralCertificate(); err != nil {
		t.Fatal(err)
	}
	if p.ephemeralLeaf, err = x509.ParseCertificate(p.ephemeral.Certificate[0]); err != nil {
		t.Fatal(err)
	}
	if p.ephemeral2Leaf, err = x509.ParseCertificate(p.ephemeral2.Certificate[0]); err != nil {
		t.Fatal(err)
	}
	return p
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// writeFile writes data and gives it a modification time of its own: the
// watch loop compares sizes and times, and two writes within one tick of
// the file system's clock would otherwise look alike.
func writeFile(t *testing.T, path string, data []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// newState writes ca and (unless nil) cert to a fresh directory and loads
// them as sec, which may set everything but the file names.
func newState(t *testing.T, sec Security, ca issued, cert *issued) *tlsState {
	t.Helper()
	dir := t.TempDir()
	sec.CAFile = filepath.Join(dir, "ca.pem")
	writeFile(t, sec.CAFile, ca.certPEM, time.Now())
	if cert != nil {
		sec.CertFile, sec.KeyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		writeFile(t, sec.CertFile, cert.certPEM, time.Now())
		writeFile(t, sec.KeyFile, cert.keyPEM, time.Now())
	}
	s, err := newTLSState(sec, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

func wantErr(t *testing.T, what string, err error, contains string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: accepted, want an error containing %q", what, contains)
	case !strings.Contains(err.Error(), contains):
		t.Errorf("%s: error %q, want it to contain %q", what, err, contains)
	}
}

func TestNewTLSStateChecksConfig(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	writeFile(t, ca, p.ca.certPEM, time.Now())
	writeFile(t, filepath.Join(dir, "garbage.pem"), []byte("not a certificate"), time.Now())
	for name, sec := range map[string]Security{
		"no CA":             {Role: RoleClient},
		"cert without key":  {Role: RoleClient, CAFile: ca, CertFile: ca},
		"broker without":    {Role: RoleBroker, CAFile: ca},
		"CA file missing":   {Role: RoleClient, CAFile: filepath.Join(dir, "missing.pem")},
		"CA file not a PEM": {Role: RoleClient, CAFile: filepath.Join(dir, "garbage.pem")},
	} {
		if s, err := newTLSState(sec, discardLogger()); err == nil {
			s.close()
			t.Errorf("%s: newTLSState accepted %+v", name, sec)
		}
	}
}

func TestClassifyClient(t *testing.T) {
	p := newTestPKI(t)
	broker := newState(t, Security{Role: RoleBroker}, p.ca, &p.broker1)
	client := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
	chain := func(c ...*x509.Certificate) []*x509.Certificate { return c }

	for _, tc := range []struct {
		name  string
		certs []*x509.Certificate
		kind  peerKind
	}{
		{"broker cert", chain(p.broker2.leaf), peerCertified},
		{"user cert", chain(p.alice.leaf), peerCertified},
		{"CN-only cert", chain(p.cnOnly.leaf), peerCertified},
		{"ephemeral cert", chain(p.ephemeralLeaf), peerEphemeral},
	} {
		kind, err := broker.classifyClient(tc.certs)
		if err != nil || kind != tc.kind {
			t.Errorf("broker, %s: kind %v err %v, want kind %v", tc.name, kind, err, tc.kind)
		}
	}
	if kind, err := client.classifyClient(chain(p.broker2.leaf)); err != nil || kind != peerCertified {
		t.Errorf("client, broker cert: kind %v err %v", kind, err)
	}

	for _, tc := range []struct {
		name  string
		s     *tlsState
		certs []*x509.Certificate
		why   string
	}{
		{"broker, expired", broker, chain(p.expired.leaf), "expired"},
		{"broker, foreign CA", broker, chain(p.foreignAlice.leaf), "unknown authority"},
		{"broker, self-signed", broker, chain(p.selfSigned.leaf), "unknown authority"},
		{"broker, no cert", broker, nil, "certificate is required"},
		{"broker, no principal", broker, chain(p.noName.leaf), "names no principal"},
		// An ephemeral certificate after another one is not a token
		// client's: those present exactly one.
		{"broker, ephemeral chain", broker, chain(p.ephemeralLeaf, p.ephemeral2Leaf), "not accepted"},
		{"client, user cert", client, chain(p.alice.leaf), "not a broker"},
		{"client, CN-only cert", client, chain(p.cnOnly.leaf), "not a broker"},
		{"client, expired", client, chain(p.expired.leaf), "expired"},
		{"client, foreign CA", client, chain(p.foreignAlice.leaf), "unknown authority"},
		{"client, self-signed", client, chain(p.selfSigned.leaf), "unknown authority"},
		{"client, ephemeral", client, chain(p.ephemeralLeaf), "unknown authority"},
		{"client, no cert", client, nil, "certificate is required"},
	} {
		_, err := tc.s.classifyClient(tc.certs)
		wantErr(t, tc.name, err, tc.why)
	}

	// A client certificate must allow client authentication.
	serverOnly := makeCert(t, certSpec{cn: "b3", uris: []string{"sluice://broker/3"}, ekus: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, &p.ca, false)
	_, err := broker.classifyClient(chain(serverOnly.leaf))
	wantErr(t, "server-only usage", err, "not accepted")
}

func TestIsEphemeral(t *testing.T) {
	p := newTestPKI(t)
	if !isEphemeral(p.ephemeralLeaf) {
		t.Error("ephemeralCertificate() is not ephemeral")
	}
	if isEphemeral(p.selfSigned.leaf) {
		t.Error("a self-signed certificate without the mark is ephemeral")
	}
	// The mark on a CA-signed certificate does not make it a token client's.
	marked := makeCert(t, certSpec{cn: "x", uris: []string{"sluice://ephemeral"}}, &p.ca, false)
	if isEphemeral(marked.leaf) {
		t.Error("a CA-signed certificate with the ephemeral URI is ephemeral")
	}
	if got := CertPrincipal(p.ephemeralLeaf); IsBrokerPrincipal(got) {
		t.Errorf("ephemeral certificate names %q", got)
	}
}

func TestCheckServer(t *testing.T) {
	p := newTestPKI(t)
	broker := newState(t, Security{Role: RoleBroker}, p.ca, &p.broker1)
	client := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
	const addr, other = "10.0.0.7:9470", "10.0.0.8:9470"
	chain := func(c ...*x509.Certificate) []*x509.Certificate { return c }

	if err := client.checkServer(addr, chain(p.broker2.leaf)); err != nil {
		t.Errorf("client dialing a broker: %v", err)
	}
	wantErr(t, "client dialing a user", client.checkServer(addr, chain(p.alice.leaf)), "not a broker")
	wantErr(t, "client dialing a CN-only cert", client.checkServer(addr, chain(p.cnOnly.leaf)), "not a broker")
	wantErr(t, "client dialing a foreign CA", client.checkServer(addr, chain(p.foreignAlice.leaf)), "unknown authority")
	wantErr(t, "client dialing a self-signed broker", client.checkServer(addr, chain(p.selfSigned.leaf)), "unknown authority")
	wantErr(t, "client dialing an expired cert", client.checkServer(addr, chain(p.expired.leaf)), "expired")
	wantErr(t, "client dialing nothing", client.checkServer(addr, nil), "no certificate")
	// Pins are a broker's: a client never accepts a self-signed peer.
	client.pin(addr, p.ephemeralLeaf)
	wantErr(t, "client dialing a pinned ephemeral", client.checkServer(addr, chain(p.ephemeralLeaf)), "not accepted")

	for name, c := range map[string]*x509.Certificate{"broker": p.broker2.leaf, "user": p.alice.leaf, "CN-only": p.cnOnly.leaf} {
		if err := broker.checkServer(addr, chain(c)); err != nil {
			t.Errorf("broker dialing a %s cert: %v", name, err)
		}
	}
	wantErr(t, "broker dialing an expired cert", broker.checkServer(addr, chain(p.expired.leaf)), "expired")
	wantErr(t, "broker dialing a foreign CA", broker.checkServer(addr, chain(p.foreignAlice.leaf)), "unknown authority")
	wantErr(t, "broker dialing a self-signed cert", broker.checkServer(addr, chain(p.selfSigned.leaf)), "unknown authority")
	wantErr(t, "broker dialing nothing", broker.checkServer(addr, nil), "no certificate")

	eph := chain(p.ephemeralLeaf)
	wantErr(t, "unpinned ephemeral", broker.checkServer(addr, eph), "not accepted")
	broker.pin(addr, p.ephemeralLeaf)
	broker.pin(addr, p.ephemeralLeaf) // a second stream of the same client
	if err := broker.checkServer(addr, eph); err != nil {
		t.Errorf("pinned ephemeral: %v", err)
	}
	wantErr(t, "ephemeral pinned elsewhere", broker.checkServer(other, eph), "not accepted")
	wantErr(t, "another ephemeral at the pinned address", broker.checkServer(addr, chain(p.ephemeral2Leaf)), "not accepted")
	wantErr(t, "pinned ephemeral after another cert", broker.checkServer(addr, chain(p.ephemeralLeaf, p.ephemeral2Leaf)), "not accepted")
	broker.unpin(addr, p.ephemeralLeaf)
	if err := broker.checkServer(addr, eph); err != nil {
		t.Errorf("ephemeral with one pin left: %v", err)
	}
	broker.unpin(addr, p.ephemeralLeaf)
	wantErr(t, "ephemeral after its last unpin", broker.checkServer(addr, eph), "not accepted")
	// An unpin too many must not leave a debt that hides the next pin.
	broker.unpin(addr, p.ephemeralLeaf)
	broker.pin(addr, p.ephemeralLeaf)
	if err := broker.checkServer(addr, eph); err != nil {
		t.Errorf("pinned again after an extra unpin: %v", err)
	}
	broker.unpin(addr, p.ephemeralLeaf)
	broker.pinMu.Lock()
	left := len(broker.pins)
	broker.pinMu.Unlock()
	if left != 0 {
		t.Errorf("%d addresses still pinned after every unpin", left)
	}
}

// side is one end of a handshake.
type side struct {
	conn net.Conn
	info credentials.AuthInfo
	err  error
}

func (s side) peerCerts(t *testing.T) []*x509.Certificate {
	t.Helper()
	info, ok := s.info.(credentials.TLSInfo)
	if !ok {
		t.Fatalf("auth info %T, want credentials.TLSInfo", s.info)
	}
	return info.State.PeerCertificates
}

// handshake connects client to server over loopback TCP (kernel buffers,
// unlike net.Pipe, let either side finish while the other does not read).
// authority is what the client dialed; "" means the listener's address.
func handshake(t *testing.T, client, server *tlsState, authority string) (cli, srv side) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if authority == "" {
		authority = ln.Addr().String()
	}
	srvc := make(chan side, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			srvc <- side{err: err}
			return
		}
		_ = raw.SetDeadline(time.Now().Add(testTimeout))
		conn, info, err := server.credentials().ServerHandshake(raw)
		if err != nil {
			raw.Close()
		}
		srvc <- side{conn, info, err}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	_ = raw.SetDeadline(time.Now().Add(testTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cli.conn, cli.info, cli.err = client.credentials().ClientHandshake(ctx, authority, raw)
	select {
	case srv = <-srvc:
	case <-time.After(testTimeout):
		t.Fatal("server handshake did not finish")
	}
	if srv.conn != nil {
		t.Cleanup(func() { srv.conn.Close() })
	}
	return cli, srv
}

// roundTrip checks that the connection carries data both ways.
func roundTrip(t *testing.T, cli, srv side) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(srv.conn, buf); err != nil {
			errc <- err
			return
		}
		_, err := srv.conn.Write([]byte("pong"))
		errc <- err
	}()
	if _, err := cli.conn.Write([]byte("ping")); err != nil {
		t.Fatalf("client write: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(cli.conn, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q: %v", buf, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("server side: %v", err)
	}
}

// wantRefused checks that the server refused the handshake, and that the
// client, whose TLS 1.3 handshake may finish before the server's verdict,
// fails now or at its next read.
func wantRefused(t *testing.T, cli, srv side, why string) {
	t.Helper()
	wantErr(t, "server handshake", srv.err, why)
	if cli.err != nil {
		return
	}
	if _, err := cli.conn.Read(make([]byte, 1)); err == nil {
		t.Error("client could read from a connection the server refused")
	}
}

func TestHandshake(t *testing.T) {
	p := newTestPKI(t)
	broker1 := newState(t, Security{Role: RoleBroker}, p.ca, &p.broker1)
	broker2 := newState(t, Security{Role: RoleBroker}, p.ca, &p.broker2)

	t.Run("broker to broker", func(t *testing.T) {
		cli, srv := handshake(t, broker1, broker2, "")
		if cli.err != nil || srv.err != nil {
			t.Fatalf("client %v, server %v", cli.err, srv.err)
		}
		if got := cli.peerCerts(t); len(got) == 0 || !got[0].Equal(p.broker2.leaf) {
			t.Error("client did not see broker 2's certificate")
		}
		if got := srv.peerCerts(t); len(got) == 0 || !got[0].Equal(p.broker1.leaf) {
			t.Error("server did not see broker 1's certificate")
		}
		if info := srv.info.(credentials.TLSInfo); info.SecurityLevel != credentials.PrivacyAndIntegrity {
			t.Errorf("security level %v", info.SecurityLevel)
		}
		roundTrip(t, cli, srv)
	})

	t.Run("user to broker", func(t *testing.T) {
		alice := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
		cli, srv := handshake(t, alice, broker1, "")
		if cli.err != nil || srv.err != nil {
			t.Fatalf("client %v, server %v", cli.err, srv.err)
		}
		if got := srv.peerCerts(t); CertPrincipal(got[0]) != "User:alice" {
			t.Errorf("server sees %q", CertPrincipal(got[0]))
		}
		roundTrip(t, cli, srv)
	})

	t.Run("foreign CA user to broker", func(t *testing.T) {
		// The foreign user trusts the cluster CA, so only the broker objects.
		mallory := newState(t, Security{Role: RoleClient}, p.ca, &p.foreignAlice)
		cli, srv := handshake(t, mallory, broker1, "")
		wantRefused(t, cli, srv, "unknown authority")
	})

	t.Run("expired user to broker", func(t *testing.T) {
		old := newState(t, Security{Role: RoleClient}, p.ca, &p.expired)
		cli, srv := handshake(t, old, broker1, "")
		wantRefused(t, cli, srv, "expired")
	})

	t.Run("client to a user posing as broker", func(t *testing.T) {
		// A RoleBroker node with a user certificate: the client refuses it.
		fake := newState(t, Security{Role: RoleBroker}, p.ca, &p.alice)
		alice := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
		cli, _ := handshake(t, alice, fake, "")
		wantErr(t, "client handshake", cli.err, "not a broker")
	})

	t.Run("token client to broker", func(t *testing.T) {
		tok := newState(t, Security{Role: RoleClient, Token: "s3cret"}, p.ca, nil)
		if tok.LocalPrincipal() != "" {
			t.Errorf("token client's local principal %q", tok.LocalPrincipal())
		}
		cli, srv := handshake(t, tok, broker1, "")
		if cli.err != nil || srv.err != nil {
			t.Fatalf("client %v, server %v", cli.err, srv.err)
		}
		got := srv.peerCerts(t)
		if len(got) != 1 || !isEphemeral(got[0]) || !sameDER(got[0], tok.ownCertificate()) {
			t.Fatal("broker did not see the token client's ephemeral certificate")
		}
		roundTrip(t, cli, srv)
	})

	t.Run("broker to token client's listener", func(t *testing.T) {
		tok := newState(t, Security{Role: RoleClient, Token: "s3cret"}, p.ca, nil)
		eph, err := x509.ParseCertificate(tok.ownCertificate().Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		const addr = "10.1.2.3:5555" // what the client announced
		cli, _ := handshake(t, broker1, tok, addr)
		wantErr(t, "unpinned listener", cli.err, "not accepted")
		broker1.pin(addr, eph)
		cli, srv := handshake(t, broker1, tok, addr)
		if cli.err != nil || srv.err != nil {
			t.Fatalf("pinned listener: client %v, server %v", cli.err, srv.err)
		}
		roundTrip(t, cli, srv)
		// The pin names one address: another one still fails.
		cli, _ = handshake(t, broker1, tok, "10.1.2.3:5556")
		wantErr(t, "listener at another address", cli.err, "not accepted")
		broker1.unpin(addr, eph)
		cli, _ = handshake(t, broker1, tok, addr)
		wantErr(t, "unpinned again", cli.err, "not accepted")
	})

	t.Run("broker to client listener", func(t *testing.T) {
		alice := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
		cli, srv := handshake(t, broker1, alice, "")
		if cli.err != nil || srv.err != nil {
			t.Fatalf("client %v, server %v", cli.err, srv.err)
		}
		roundTrip(t, cli, srv)
	})

	t.Run("user to client listener", func(t *testing.T) {
		// Only brokers deliver to a client; bob's node is a broker by role
		// but holds a user certificate.
		bob := newState(t, Security{Role: RoleBroker}, p.ca, &p.cnOnly)
		alice := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
		cli, srv := handshake(t, bob, alice, "")
		wantRefused(t, cli, srv, "not a broker")
	})

	t.Run("token client to client listener", func(t *testing.T) {
		tok := newState(t, Security{Role: RoleClient, Token: "s3cret"}, p.ca, nil)
		alice := newState(t, Security{Role: RoleClient}, p.ca, &p.alice)
		cli, srv := handshake(t, tok, alice, "")
		// Both sides object: alice is no broker, the ephemeral cert no CA's.
		if cli.err == nil && srv.err == nil {
			t.Fatal("handshake succeeded")
		}
	})
}

func sameDER(c *x509.Certificate, t *tls.Certificate) bool {
	return len(t.Certificate) > 0 && string(c.Raw) == string(t.Certificate[0])
}

func TestReload(t *testing.T) {
	p := newTestPKI(t)
	s := newState(t, Security{Role: RoleBroker, ReloadEvery: time.Hour}, p.ca, &p.broker1)
	if got := s.LocalPrincipal(); got != "Broker:1" {
		t.Fatalf("local principal %q, want Broker:1", got)
	}
	later := time.Now().Add(time.Minute)
	writeFile(t, s.sec.CertFile, p.broker2.certPEM, later)
	writeFile(t, s.sec.KeyFile, p.broker2.keyPEM, later)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := s.LocalPrincipal(); got != "Broker:2" {
		t.Fatalf("after Reload: %q, want Broker:2", got)
	}
	if !sameDER(p.broker2.leaf, s.ownCertificate()) {
		t.Fatal("after Reload the node presents the old certificate")
	}

	for name, write := range map[string]func(){
		"garbage certificate": func() { writeFile(t, s.sec.CertFile, []byte("-----BEGIN CERT"), later) },
		"key of another cert": func() {
			writeFile(t, s.sec.CertFile, p.broker1.certPEM, later)
			writeFile(t, s.sec.KeyFile, p.broker2.keyPEM, later)
		},
		"garbage CA": func() {
			writeFile(t, s.sec.CertFile, p.broker2.certPEM, later)
			writeFile(t, s.sec.CAFile, []byte("nothing"), later)
		},
		"missing key": func() { os.Remove(s.sec.KeyFile) },
	} {
		write()
		if err := s.Reload(); err == nil {
			t.Errorf("%s: Reload succeeded", name)
		}
		if got := s.LocalPrincipal(); got != "Broker:2" || !sameDER(p.broker2.leaf, s.ownCertificate()) {
			t.Errorf("%s: the old material was dropped (principal %q)", name, got)
		}
		// Restore the good files for the next case.
		writeFile(t, s.sec.CertFile, p.broker2.certPEM, later)
		writeFile(t, s.sec.KeyFile, p.broker2.keyPEM, later)
		writeFile(t, s.sec.CAFile, p.ca.certPEM, later)
	}
	// The kept CA pool still verifies peers.
	if _, err := s.classifyClient([]*x509.Certificate{p.alice.leaf}); err != nil {
		t.Errorf("after failed reloads: %v", err)
	}
}

// signalHandler reports every warning the watch loop logs.
type signalHandler struct {
	slog.Handler
	warned chan struct{}
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		select {
		case h.warned <- struct{}{}:
		default:
		}
	}
	return nil
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }

func TestReloadWatch(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	sec := Security{Role: RoleBroker, ReloadEvery: 50 * time.Millisecond,
		CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	start := time.Now()
	writeFile(t, sec.CAFile, p.ca.certPEM, start)
	writeFile(t, sec.CertFile, p.broker1.certPEM, start)
	writeFile(t, sec.KeyFile, p.broker1.keyPEM, start)
	warned := make(chan struct{}, 1)
	s, err := newTLSState(sec, slog.New(signalHandler{Handler: slog.DiscardHandler, warned: warned}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)

	// Key first: until the certificate follows, the pair does not match and
	// the loop keeps the old one.
	writeFile(t, sec.KeyFile, p.broker2.keyPEM, start.Add(time.Minute))
	writeFile(t, sec.CertFile, p.broker2.certPEM, start.Add(time.Minute))
	waitFor(t, "the watch loop to load broker 2", func() bool { return s.LocalPrincipal() == "Broker:2" })

	// Warnings logged before that reload are stale.
	select {
	case <-warned:
	default:
	}
	writeFile(t, sec.CertFile, []byte("-----BEGIN CERTIFICATE-----\nhalf"), start.Add(2*time.Minute))
	select {
	case <-warned:
	case <-time.After(testTimeout):
		t.Fatal("the watch loop did not notice the half-written file")
	}
	if got := s.LocalPrincipal(); got != "Broker:2" || !sameDER(p.broker2.leaf, s.ownCertificate()) {
		t.Fatalf("a half-written file replaced the material: %q", got)
	}
	// Once the write completes, the next tick loads it.
	writeFile(t, sec.KeyFile, p.broker1.keyPEM, start.Add(3*time.Minute))
	writeFile(t, sec.CertFile, p.broker1.certPEM, start.Add(3*time.Minute))
	waitFor(t, "the watch loop to load broker 1 again", func() bool { return s.LocalPrincipal() == "Broker:1" })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, testTimeout, what, cond)
}
