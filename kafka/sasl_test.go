package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
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
	_, addr := startServer(t, oneAnswer(md), Config{SASL: true, Login: func(user, password string) (string, bool) {
		return "User:" + user, user == "alice" && password == "sluice_ok"
	}})
	handshake := func(c *client, mechanism string) int16 {
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
	login := func(c *client, auth string) int16 {
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
		return resp.ErrorCode
	}
	metadata := func(c *client) error {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(9)
		c.send(frameRequest(req, 3))
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(9)
		_, err := c.read(resp)
		return err
	}

	if err := metadata(dial(t, addr)); err == nil {
		t.Error("metadata answered before the login")
	}
	if c := dial(t, addr); handshake(c, "SCRAM-SHA-256") != errUnsupportedSASLMechanism {
		t.Error("an unsupported mechanism was taken")
	}
	c := dial(t, addr)
	if code := handshake(c, "PLAIN"); code != 0 {
		t.Fatalf("handshake: %d", code)
	}
	if code := login(c, "\x00alice\x00sluice_ok"); code != 0 {
		t.Fatalf("login: %d", code)
	}
	if err := metadata(c); err != nil {
		t.Errorf("metadata after the login: %v", err)
	}

	bad := dial(t, addr)
	handshake(bad, "PLAIN")
	if code := login(bad, "\x00alice\x00sluice_wrong"); code != int16(messages.ErrorCode_SASL_AUTHENTICATION_FAILED) {
		t.Errorf("a wrong password: code %d", code)
	}
	if err := metadata(bad); err == nil {
		t.Error("the connection went on after a refused login")
	}
}

// Refusals from one address in the last minute lengthen the next one's
// delay, up to a bound; another address, or a minute later, starts again.
func TestLoginFailuresSlowASource(t *testing.T) {
	var f loginFailures
	t0 := time.Unix(1_700_000_000, 0)
	var delays []time.Duration
	for i := range 12 {
		d, _ := f.failed("10.0.0.1", t0.Add(time.Duration(i)*time.Second))
		delays = append(delays, d)
	}
	if delays[0] != failedLoginDelay || delays[1] != 2*failedLoginDelay || delays[11] != maxLoginDelay {
		t.Errorf("delays %v", delays)
	}
	if d, n := f.failed("10.0.0.2", t0); d != failedLoginDelay || n != 1 {
		t.Errorf("another address: %v %d", d, n)
	}
	if d, _ := f.failed("10.0.0.1", t0.Add(2*time.Minute)); d != failedLoginDelay {
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
