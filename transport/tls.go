package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// Role says which side of Sluice's trust a node is on.
type Role int

const (
	// RoleBroker accepts brokers and clients (by certificate or token).
	RoleBroker Role = iota
	// RoleClient accepts only brokers: its listener exists to receive the
	// brokers' answers, and nobody else may deliver one.
	RoleClient
)

// Security turns on mutual TLS for a node. Every connection, in and out,
// is TLS with certificates from CAFile; the dial side verifies that the
// peer is what it must be (a broker, for a client), the listening side
// requires a certificate and maps it to a principal.
type Security struct {
	Role Role
	// CertFile and KeyFile are the node's certificate and key (PEM). A
	// client may leave them empty and authenticate with Token instead.
	CertFile, KeyFile string
	// CAFile holds the cluster's CA certificates (PEM).
	CAFile string
	// Token is a client's bearer token, sent on its connections to brokers.
	Token string
	// Authenticate maps a bearer token to its principal (a broker's user
	// table); nil: tokens are refused.
	Authenticate func(token string) (principal string, ok bool)
	// ReloadEvery is how often the files are checked for changes. Default 2 s.
	ReloadEvery time.Duration
}

// ErrAuthentication wraps every failure to authenticate to a peer.
var ErrAuthentication = errors.New("authentication failed")

// keyMaterial is one load of the files.
type keyMaterial struct {
	cert  *tls.Certificate
	leaf  *x509.Certificate
	pool  *x509.CertPool
	stamp string // sizes and mtimes of the files
}

// tlsState holds a node's current key material, reloaded when the files
// change, and the pins of token clients' reply listeners.
type tlsState struct {
	sec    Security
	logger *slog.Logger
	cur    atomic.Pointer[keyMaterial]
	// ephemeral is the certificate of a client without one of its own.
	ephemeral *tls.Certificate

	pinMu sync.Mutex
	pins  map[string]map[[32]byte]int // address -> fingerprint -> streams

	stop chan struct{}
	done sync.WaitGroup

	refusals atomic.Int64
	lastLog  atomic.Int64 // UnixNano of the last refusal logged
}

// refused logs a failed TLS handshake of a connecting peer, at most once a
// second (a hostile peer must not flood the log); gRPC itself says nothing.
func (s *tlsState) refused(peer net.Addr, err error) {
	n := s.refusals.Add(1)
	now, last := time.Now().UnixNano(), s.lastLog.Load()
	if now-last < int64(time.Second) || !s.lastLog.CompareAndSwap(last, now) {
		return
	}
	s.logger.Warn("refused a TLS connection", "peer", peer.String(), "error", err, "refused_total", n)
}

func newTLSState(sec Security, logger *slog.Logger) (*tlsState, error) {
	if sec.CAFile == "" {
		return nil, errors.New("TLS needs a CA file")
	}
	if (sec.CertFile == "") != (sec.KeyFile == "") {
		return nil, errors.New("TLS needs both a certificate and its key")
	}
	if sec.CertFile == "" && sec.Role == RoleBroker {
		return nil, errors.New("a broker's TLS needs a certificate and key")
	}
	if sec.ReloadEvery <= 0 {
		sec.ReloadEvery = 2 * time.Second
	}
	s := &tlsState{sec: sec, logger: logger, pins: map[string]map[[32]byte]int{}, stop: make(chan struct{})}
	km, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur.Store(km)
	if sec.CertFile == "" {
		if s.ephemeral, err = ephemeralCertificate(); err != nil {
			return nil, err
		}
	}
	s.done.Add(1)
	go s.watch()
	return s, nil
}

// fileStamp identifies the contents of the files: a rewrite is noticed even
// when it keeps the size and the modification time.
func fileStamp(paths ...string) string {
	h := sha256.New()
	for _, p := range paths {
		if p == "" {
			continue
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(h, "%s:%d:", p, len(data))
		h.Write(data)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func (s *tlsState) load() (*keyMaterial, error) {
	km := &keyMaterial{stamp: fileStamp(s.sec.CertFile, s.sec.KeyFile, s.sec.CAFile)}
	caPEM, err := os.ReadFile(s.sec.CAFile)
	if err != nil {
		return nil, fmt.Errorf("TLS CA: %w", err)
	}
	km.pool = x509.NewCertPool()
	if !km.pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("TLS CA %s holds no PEM certificate", s.sec.CAFile)
	}
	if s.sec.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.sec.CertFile, s.sec.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		if km.leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		km.cert = &cert
	}
	return km, nil
}

// Reload reads the files again now; on error the old material stays.
func (s *tlsState) Reload() error {
	km, err := s.load()
	if err != nil {
		return err
	}
	s.cur.Store(km)
	return nil
}

// watch reloads the files when their sizes or times change.
func (s *tlsState) watch() {
	defer s.done.Done()
	t := time.NewTicker(s.sec.ReloadEvery)
	defer t.Stop()
	badStamp := ""
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		stamp := fileStamp(s.sec.CertFile, s.sec.KeyFile, s.sec.CAFile)
		if stamp == s.cur.Load().stamp || stamp == badStamp {
			continue
		}
		if err := s.Reload(); err != nil {
			// A half-written file: the next change tries again. Said once
			// per version of the files.
			badStamp = stamp
			s.logger.Warn("TLS files changed but cannot be loaded; keeping the previous ones", "error", err)
			continue
		}
		s.logger.Info("TLS certificates reloaded", "cert", s.sec.CertFile, "ca", s.sec.CAFile)
	}
}

func (s *tlsState) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.done.Wait()
}

// ownCertificate is what this node presents, on either side.
func (s *tlsState) ownCertificate() *tls.Certificate {
	if km := s.cur.Load(); km.cert != nil {
		return km.cert
	}
	return s.ephemeral
}

// LocalPrincipal is the principal of this node's own certificate ("" for a
// client without one).
func (s *tlsState) LocalPrincipal() string {
	if km := s.cur.Load(); km.leaf != nil {
		return CertPrincipal(km.leaf)
	}
	return ""
}

// verifyChain checks certs (leaf first) against the CA pool for usage.
func (s *tlsState) verifyChain(certs []*x509.Certificate, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: s.cur.Load().pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// peerKind is what a verified peer certificate is.
type peerKind int

const (
	peerCertified peerKind = iota // chains to the CA: its principal is its own
	peerEphemeral                 // a token client's self-signed certificate
)

// classifyClient checks the certificate a connecting peer presented.
func (s *tlsState) classifyClient(certs []*x509.Certificate) (peerKind, error) {
	if len(certs) == 0 {
		return 0, errors.New("a client certificate is required")
	}
	err := s.verifyChain(certs, x509.ExtKeyUsageClientAuth)
	switch {
	case err == nil && CertPrincipal(certs[0]) == "":
		return 0, errors.New("the certificate names no principal")
	case err == nil:
		if s.sec.Role == RoleClient && !IsBrokerPrincipal(CertPrincipal(certs[0])) {
			return 0, fmt.Errorf("%s is not a broker: only brokers may connect to a client", CertPrincipal(certs[0]))
		}
		return peerCertified, nil
	case s.sec.Role == RoleBroker && len(certs) == 1 && isEphemeral(certs[0]):
		// Who it is comes from its token, checked on its stream.
		return peerEphemeral, nil
	}
	return 0, fmt.Errorf("certificate of %q not accepted: %w", certs[0].Subject.CommonName, err)
}

func fingerprint(c *x509.Certificate) [32]byte { return sha256.Sum256(c.Raw) }

// pin lets this node dial addr and accept the self-signed certificate c:
// a token client's reply listener, announced on a stream that
// authenticated. unpin undoes one pin.
func (s *tlsState) pin(addr string, c *x509.Certificate) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	m := s.pins[addr]
	if m == nil {
		m = map[[32]byte]int{}
		s.pins[addr] = m
	}
	m[fingerprint(c)]++
}

func (s *tlsState) unpin(addr string, c *x509.Certificate) {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	fp := fingerprint(c)
	if m := s.pins[addr]; m != nil {
		if m[fp]--; m[fp] <= 0 {
			delete(m, fp)
		}
		if len(m) == 0 {
			delete(s.pins, addr)
		}
	}
}

func (s *tlsState) pinned(addr string, c *x509.Certificate) bool {
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	return s.pins[addr][fingerprint(c)] > 0
}

// checkServer checks the certificate of a peer this node dialed at addr.
func (s *tlsState) checkServer(addr string, certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return errors.New("the peer sent no certificate")
	}
	err := s.verifyChain(certs, x509.ExtKeyUsageServerAuth)
	switch {
	case err == nil && s.sec.Role == RoleClient && !IsBrokerPrincipal(CertPrincipal(certs[0])):
		return fmt.Errorf("%s is %q, not a broker", addr, CertPrincipal(certs[0]))
	case err == nil:
		return nil
	case s.sec.Role == RoleBroker && len(certs) == 1 && s.pinned(addr, certs[0]):
		return nil
	}
	return fmt.Errorf("%s: certificate of %q not accepted: %w", addr, certs[0].Subject.CommonName, err)
}

// credentials returns the gRPC transport credentials of the node.
func (s *tlsState) credentials() credentials.TransportCredentials { return &tlsCreds{s: s} }

// tlsCreds is gRPC's TransportCredentials over a tlsState: the standard TLS
// handshake with Sluice's own peer checks, which need the dialed address
// (pins) and the node's role.
type tlsCreds struct{ s *tlsState }

// clientConfig is the TLS configuration of a connection this node dials
// to authority.
func (s *tlsState) clientConfig(authority string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
	// The chain and the peer's principal are checked below; host names mean
	// little between brokers that find each other by registered address.
	cfg.InsecureSkipVerify = true
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return s.ownCertificate(), nil }
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return s.checkServer(authority, cs.PeerCertificates) }
	return cfg
}

// probeHandshake makes one TLS connection to addr and waits for the peer's
// first bytes: with TLS 1.3 a server that refuses this node's certificate
// says so only after the client's side of the handshake has completed, in
// an alert that gRPC, which writes at once, often loses to a reset.
func (s *tlsState) probeHandshake(ctx context.Context, addr string) error {
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	conn := tls.Client(raw, s.clientConfig(addr))
	defer conn.Close()
	if err := conn.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		switch {
		case errors.As(err, &rh):
			return fmt.Errorf("%w: %s answered %s, not TLS", ErrNotSluice, addr, quoteStart(rh.RecordHeader[:]))
		case ctx.Err() != nil:
			return fmt.Errorf("%w from %s to a TLS handshake: a paused or overloaded broker, or not a Sluice broker", ErrNoAnswer, addr)
		}
		return fmt.Errorf("%w: TLS with %s failed: %v", ErrAuthentication, addr, err)
	}
	// A gRPC server sends its settings right after the handshake.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // silent but open: not a refusal
		}
		return fmt.Errorf("%w: %s refused this client's TLS certificate: %v", ErrAuthentication, addr, err)
	}
	return nil
}

func (c *tlsCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn := tls.Client(raw, c.s.clientConfig(authority))
	if err := conn.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, tlsInfo(conn), nil
}

func (c *tlsCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.s.ownCertificate(), nil }
	// Verification is classifyClient's: a token client's certificate is
	// self-signed.
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		_, err := c.s.classifyClient(cs.PeerCertificates)
		return err
	}
	conn := tls.Server(raw, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		conn.Close()
		c.s.refused(raw.RemoteAddr(), err)
		return nil, nil, err
	}
	return conn, tlsInfo(conn), nil
}

func tlsInfo(conn *tls.Conn) credentials.TLSInfo {
	return credentials.TLSInfo{State: conn.ConnectionState(), CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
}

func (c *tlsCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.2"}
}

func (c *tlsCreds) Clone() credentials.TransportCredentials { return &tlsCreds{s: c.s} }

func (c *tlsCreds) OverrideServerName(string) error { return nil }

// tokenCreds sends a client's bearer token with every stream, over TLS only.
type tokenCreds struct{ token string }

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + t.token}, nil
}

func (t tokenCreds) RequireTransportSecurity() bool { return true }

// ephemeralCertificate makes the self-signed certificate of a client that
// authenticates with a token.
func ephemeralCertificate() (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "sluice token client"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		URIs:         []*url.URL{ephemeralURI},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// proveTimeout bounds proveListener.
const proveTimeout = 5 * time.Second

// proveListener checks that the listener at addr, which a client announced
// as its own, serves with that client's identity: the certificate of
// principal (from the cluster's CA) or, for a token client, the very
// self-signed certificate of its connection. Without the check a client
// could announce another client's address and aim this broker's answers at
// that client's node.
func (s *tlsState) proveListener(ctx context.Context, addr, principal string, ephemeral *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(ctx, proveTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot reach the announced listener %s: %w", addr, err)
	}
	var peer []*x509.Certificate
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}, InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return s.ownCertificate(), nil },
		VerifyConnection:     func(cs tls.ConnectionState) error { peer = cs.PeerCertificates; return nil }}
	conn := tls.Client(raw, cfg)
	err = conn.HandshakeContext(ctx)
	conn.Close()
	switch {
	case len(peer) == 0:
		return fmt.Errorf("no certificate from the announced listener %s: %v", addr, err)
	case ephemeral != nil:
		if fingerprint(peer[0]) != fingerprint(ephemeral) {
			return fmt.Errorf("the announced listener %s serves another certificate than the connection's", addr)
		}
		return nil
	}
	if err := s.verifyChain(peer, x509.ExtKeyUsageServerAuth); err != nil {
		return fmt.Errorf("the announced listener %s: %w", addr, err)
	}
	if got := CertPrincipal(peer[0]); got != principal {
		return fmt.Errorf("the announced listener %s is %s, not %s", addr, got, principal)
	}
	return nil
}
