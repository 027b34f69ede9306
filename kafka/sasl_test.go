package kafka

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/metrics"
)

func TestParsePlain(t *testing.T) {
	for _, tc := range []struct {
		in         string
		user, pass string
		ok         bool
	}{
		{"\x00alice\x00secret", "alice", "secret", true},
		{"alice\x00alice\x00secret", "alice", "secret", true},
		{"bob\x00alice\x00secret", "", "", false}, // acting as another user
		{"\x00alice\x00", "", "", false},
		{"alice secret", "", "", false},
		{"\x00\x00secret", "", "", false},
	} {
		user, pass, ok := parsePlain([]byte(tc.in))
		if user != tc.user || pass != tc.pass || ok != tc.ok {
			t.Errorf("%q: %q %q %v", tc.in, user, pass, ok)
		}
	}
}

// On a listener that requires SASL, a request before the login closes the
// connection; a login with PLAIN names the principal; a wrong one is
// SASL_AUTHENTICATION_FAILED and closes the connection.
func TestSASLLogin(t *testing.T) {
	md := testMetadata()
	// FrameTimeout: a frame's body is waited for longer than the test
	// waits for an answer.
	m := metrics.New(metrics.Build{}, metrics.Options{})
	_, addr := startServer(t, oneAnswer(md), Config{SASL: true, FrameTimeout: time.Minute, Metrics: m, Login: func(user, password string) (string, bool) {
		return "User:" + user, user == "alice" && password == "sluice_ok"
	}})

	if err := metadataOn(dial(t, addr)); err == nil {
		t.Error("metadata answered before the login")
	}
	v0 := kmsg.NewPtrSASLHandshakeRequest()
	v0.Mechanism = "PLAIN" // v0: raw SASL bytes would follow
	c0 := dial(t, addr)
	c0.send(frameRequest(v0, 1))
	if resp := kmsg.NewPtrSASLHandshakeResponse(); func() error { _, err := c0.read(resp); return err }() != nil || resp.ErrorCode != errUnsupportedVersion {
		t.Errorf("a v0 handshake: %+v", resp)
	}
	if c := dial(t, addr); saslHandshake(t, c, "SCRAM-SHA-256") != errUnsupportedSASLMechanism {
		t.Error("an unsupported mechanism was taken")
	}
	c := dial(t, addr)
	if code := saslHandshake(t, c, "PLAIN"); code != 0 {
		t.Fatalf("handshake: %d", code)
	}
	if code := saslLogin(t, c, "\x00alice\x00sluice_ok").ErrorCode; code != 0 {
		t.Fatalf("login: %d", code)
	}
	if err := metadataOn(c); err != nil {
		t.Errorf("metadata after the login: %v", err)
	}

	bad := dial(t, addr)
	saslHandshake(t, bad, "PLAIN")
	if code := saslLogin(t, bad, "\x00alice\x00sluice_wrong").ErrorCode; code != int16(messages.ErrorCode_SASL_AUTHENTICATION_FAILED) {
		t.Errorf("a wrong password: code %d", code)
	}
	if err := metadataOn(bad); err == nil {
		t.Error("the connection went on after a refused login")
	}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP sluice_kafka_login_failures_total SASL logins refused on the Kafka listener, by mechanism (each is logged with its source address and that address's refusals in the last minute).
# TYPE sluice_kafka_login_failures_total counter
sluice_kafka_login_failures_total{mechanism="PLAIN"} 1
`), "sluice_kafka_login_failures_total"); err != nil {
		t.Error(err)
	}

	// Before the login a frame may not be larger than a login needs: a
	// stranger cannot make the listener wait for (and hold) megabytes. The
	// size of a 600 KB frame (under the listener's frame limit) closes the
	// connection at once, without waiting for its body; after the login
	// the frame is served.
	big := kmsg.NewPtrMetadataRequest()
	big.SetVersion(9)
	for range 20 {
		big.Topics = append(big.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(strings.Repeat("t", 30000))})
	}
	stranger := dial(t, addr)
	stranger.send(frameRequest(big, 4)[:4]) // the size only
	if _, err := stranger.read(kmsg.NewPtrMetadataResponse()); !errors.Is(err, io.EOF) {
		t.Errorf("the size of a 600 KB frame before the login: %v, want the connection closed", err)
	}
	member := dial(t, addr)
	saslHandshake(t, member, "PLAIN")
	saslLogin(t, member, "\x00alice\x00sluice_ok")
	member.send(frameRequest(big, 4))
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(9)
	if _, err := member.read(resp); err != nil {
		t.Errorf("a 600 KB frame after the login: %v", err)
	}
}

// Refusals from one address in the last minute lengthen the next one's
// delay, up to a bound; refusals whose answers are still waiting queue
// behind them; another address, or a minute later, starts again.
func TestLoginFailuresSlowASource(t *testing.T) {
	var f loginFailures
	t0 := time.Unix(1_700_000_000, 0)
	var delays []time.Duration
	for i := range 12 { // 15 s apart: each answered before the next
		d, _ := f.failed("10.0.0.1", t0.Add(time.Duration(i)*15*time.Second))
		delays = append(delays, d)
	}
	if delays[0] != failedLoginDelay || delays[1] != 2*failedLoginDelay || delays[11] != maxLoginDelay {
		t.Errorf("delays %v", delays)
	}
	if d, n := f.failed("10.0.0.2", t0); d != failedLoginDelay || n != 1 {
		t.Errorf("another address: %v %d", d, n)
	}
	if d, n := f.failed("10.0.0.2", t0); d != 3*failedLoginDelay || n != 2 {
		t.Errorf("at the same time: %v %d, want to wait for the first answer and then its own", d, n)
	}
	if d, _ := f.failed("10.0.0.1", t0.Add(12*15*time.Second+2*time.Minute)); d != failedLoginDelay {
		t.Errorf("a minute later: %v", d)
	}
}

// Any bytes a client sends as a PLAIN login are parsed without a panic,
// and what is accepted names a user and a password.
func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00alice\x00secret", "a\x00a\x00p", "", "\x00\x00", "x\x00y\x00z\x00w"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		user, pass, ok := parsePlain(b)
		if ok && (user == "" || pass == "") {
			t.Fatalf("%q accepted as %q / %q", b, user, pass)
		}
	})
}

// A session ends SessionLifetime after its login: a request after that
// closes the connection, unless the client logged in again with the same
// mechanism as the same principal. A login again as someone else is
// refused and closes the connection; a connection that logged in with a
// certificate, or a listener without lifetimes, has no login again.
func TestSASLSessionLifetime(t *testing.T) {
	lifetime := time.Second
	_, addr := startServer(t, oneAnswer(testMetadata()), Config{SASL: true, SessionLifetime: lifetime,
		Login: func(user, password string) (string, bool) { return "User:" + user, password == "sluice_ok" }})

	c := dial(t, addr)
	saslHandshake(t, c, "PLAIN")
	if resp := saslLogin(t, c, "\x00alice\x00sluice_ok"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("login: code %d, lifetime %d ms", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	for range 3 { // log in again before each end: the connection lives on
		if err := metadataOn(c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(lifetime / 2)
		if code := saslHandshake(t, c, "PLAIN"); code != 0 {
			t.Fatalf("handshake again: %d", code)
		}
		if resp := saslLogin(t, c, "\x00alice\x00sluice_ok"); resp.ErrorCode != 0 {
			t.Fatalf("login again: %d", resp.ErrorCode)
		}
	}
	time.Sleep(lifetime + 50*time.Millisecond) // past the session's end
	if err := metadataOn(c); err == nil {
		t.Error("a request after the session ended was answered")
	}

	other := dial(t, addr)
	saslHandshake(t, other, "PLAIN")
	saslLogin(t, other, "\x00alice\x00sluice_ok")
	saslHandshake(t, other, "PLAIN")
	if resp := saslLogin(t, other, "\x00bob\x00sluice_ok"); resp.ErrorCode != int16(messages.ErrorCode_SASL_AUTHENTICATION_FAILED) {
		t.Errorf("a login again as bob: code %d", resp.ErrorCode)
	}
	if err := metadataOn(other); err == nil {
		t.Error("the connection went on after a login again as another principal")
	}

	// Without lifetimes there is no login again.
	_, forever := startServer(t, oneAnswer(testMetadata()), Config{SASL: true,
		Login: func(user, password string) (string, bool) { return "User:" + user, true }})
	f := dial(t, forever)
	saslHandshake(t, f, "PLAIN")
	if resp := saslLogin(t, f, "\x00alice\x00x"); resp.SessionLifetimeMillis != 0 {
		t.Errorf("a lifetime of %d ms without one configured", resp.SessionLifetimeMillis)
	}
	if code := saslHandshake(t, f, "PLAIN"); code != errIllegalSASLState {
		t.Errorf("a second handshake without lifetimes: %d", code)
	}
}

func TestParseOAuthBearer(t *testing.T) {
	for _, c := range []struct {
		in             string
		token, authzid string
		ok             bool
	}{
		{"n,,\x01auth=Bearer abc.def.ghi\x01\x01", "abc.def.ghi", "", true},
		{"n,a=alice,\x01auth=Bearer t\x01host=h\x01port=1\x01\x01", "t", "alice", true},
		{"y,,\x01k=v\x01auth=bearer t\x01\x01", "t", "", true},
		{"n,,\x01auth=Bearer \x01\x01", "", "", false},
		{"n,,\x01auth=Basic abc\x01\x01", "", "", false},
		{"n,,\x01host=h\x01\x01", "", "", false},
		{"p=x,,\x01auth=Bearer t\x01\x01", "", "", false},
		{"n,,auth=Bearer t", "", "", false},
		{"", "", "", false},
	} {
		token, authzid, ok := parseOAuthBearer([]byte(c.in))
		if token != c.token || authzid != c.authzid || ok != c.ok {
			t.Errorf("%q: %q %q %v", c.in, token, authzid, ok)
		}
	}
}

// franz-go logs in with OAUTHBEARER; the session lasts until the token
// expires (the answer says so, and the client logs in again with a fresh
// token); a refused token is SASL_AUTHENTICATION_FAILED.
func TestSASLOAuthBearer(t *testing.T) {
	var logins atomic.Int32
	_, addr := startServer(t, oneAnswer(testMetadata()), Config{SASL: true, OAuth: func(token string) (string, time.Time, error) {
		logins.Add(1)
		if token != "good" {
			return "", time.Time{}, errors.New("no")
		}
		return "User:alice", time.Now().Add(2 * time.Second), nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: "good"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	for start := time.Now(); time.Since(start) < 4*time.Second; time.Sleep(100 * time.Millisecond) {
		if _, err := seed.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
	}
	if n := logins.Load(); n < 3 {
		t.Errorf("%d logins over two token lifetimes", n)
	}
	bad, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: "forged"}.AsMechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bad); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a refused token: %v", err)
	}
}

// Any bytes a client sends as an OAUTHBEARER response are parsed without
// a panic, and what is accepted has a token.
func FuzzParseOAuthBearer(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer t\x01\x01"))
	f.Add([]byte("n,a=x,\x01auth=Bearer t\x01k=v\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if token, _, ok := parseOAuthBearer(b); ok && token == "" {
			t.Fatalf("%q accepted without a token", b)
		}
	})
}

// saslHandshake sends a SaslHandshake v1 for mechanism and returns its code.
func saslHandshake(t *testing.T, c *client, mechanism string) int16 {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mechanism
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(1)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// saslLogin sends a SaslAuthenticate v2 with auth and returns the answer.
func saslLogin(t *testing.T, c *client, auth string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = []byte(auth)
	c.send(frameRequest(req, 2))
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(2)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// metadataOn sends a Metadata v9 and reads its answer (an error: the
// connection was closed).
func metadataOn(c *client) error {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	c.send(frameRequest(req, 3))
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(9)
	_, err := c.read(resp)
	return err
}

// A guesser trying 1,000 passwords over 20 connections at once is slowed
// as much as one trying them in turn: the delays of one address's refused
// logins run one after another, not side by side. Every refusal is
// counted. (Delays here are milliseconds; the broker's are seconds.)
func TestBruteForceIsSlowedAcrossConnections(t *testing.T) {
	const tries, workers = 1000, 20 // the listener holds 32 unanswered connections of one address
	step, most := time.Millisecond, 4*time.Millisecond
	m := metrics.New(metrics.Build{}, metrics.Options{})
	_, addr := startServer(t, oneAnswer(testMetadata()), Config{SASL: true, Metrics: m,
		FailedLoginDelay: step, MaxFailedLoginDelay: most,
		Login: func(user, password string) (string, bool) { return "User:" + user, false }})
	try := func(i int) error {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(time.Minute))
		c := &client{t: t, nc: nc, r: bufio.NewReader(nc)}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "PLAIN"
		if _, err := nc.Write(frameRequest(hs, 1)); err != nil {
			return err
		}
		hr := kmsg.NewPtrSASLHandshakeResponse()
		hr.SetVersion(1)
		if _, err := c.read(hr); err != nil || hr.ErrorCode != 0 {
			return fmt.Errorf("handshake: %v %d", err, hr.ErrorCode)
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = []byte(fmt.Sprintf("\x00admin\x00guess-%d", i))
		if _, err := nc.Write(frameRequest(auth, 2)); err != nil {
			return err
		}
		ar := kmsg.NewPtrSASLAuthenticateResponse()
		ar.SetVersion(2)
		if _, err := c.read(ar); err != nil || ar.ErrorCode != int16(messages.ErrorCode_SASL_AUTHENTICATION_FAILED) {
			return fmt.Errorf("login: %v %d", err, ar.ErrorCode)
		}
		return nil
	}
	start := time.Now()
	errs := make(chan error, tries)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < tries; i += workers {
				errs <- try(i)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// In turn, the refusals' delays add up to 1+2+3+4*997 ms.
	var inTurn time.Duration
	for i := 1; i <= tries; i++ {
		inTurn += min(time.Duration(i)*step, most)
	}
	if took < inTurn {
		t.Errorf("%d refused logins over %d connections took %v; one after another they take at least %v", tries, workers, took, inTurn)
	}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(fmt.Sprintf(`
# HELP sluice_kafka_login_failures_total SASL logins refused on the Kafka listener, by mechanism (each is logged with its source address and that address's refusals in the last minute).
# TYPE sluice_kafka_login_failures_total counter
sluice_kafka_login_failures_total{mechanism="PLAIN"} %d
`, tries)), "sluice_kafka_login_failures_total"); err != nil {
		t.Error(err)
	}
	t.Logf("%d refused logins over %d connections took %v (their delays in turn: %v)", tries, workers, took, inTurn)
}
