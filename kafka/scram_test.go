package kafka

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// passwords is a lookup of SCRAM credentials made from plain passwords.
func passwords(t testing.TB, iterations int, byUser map[string]string) func(string, int32) (*messages.ScramCredential, bool) {
	creds := map[acl.ScramKey]*messages.ScramCredential{}
	for user, pass := range byUser {
		for _, mech := range []int32{acl.ScramSHA256, acl.ScramSHA512} {
			salt := []byte("salt of " + user)
			salted, err := acl.SaltPassword(mech, pass, salt, iterations)
			if err != nil {
				t.Fatal(err)
			}
			creds[acl.ScramKey{User: user, Mechanism: mech}] = acl.ScramCredentialOf(mech, int32(iterations), salt, salted)
		}
	}
	return func(user string, mech int32) (*messages.ScramCredential, bool) {
		c, ok := creds[acl.ScramKey{User: user, Mechanism: mech}]
		return c, ok
	}
}

// The example conversation of RFC 7677 (SCRAM-SHA-256, user "user",
// password "pencil"), byte for byte.
func TestScramRFC7677Example(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := acl.SaltPassword(acl.ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cred := acl.ScramCredentialOf(acl.ScramSHA256, 4096, salt, salted)
	s := newScramLogin(acl.ScramSHA256, []byte("secret"), func(user string, mech int32) (*messages.ScramCredential, bool) {
		return cred, user == "user" && mech == acl.ScramSHA256
	})
	s.serverNonce = func() (string, error) { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", nil }
	reply, done, err := s.next([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; err != nil || done || string(reply) != want {
		t.Fatalf("server-first %q %v %v, want %q", reply, done, err, want)
	}
	reply, done, err = s.next([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; err != nil || !done || string(reply) != want {
		t.Fatalf("server-final %q %v %v, want %q", reply, done, err, want)
	}
	if _, _, err := s.next([]byte("more")); err == nil {
		t.Error("a third message was taken")
	}
}

// librdkafka puts its own nonce before the whole of the server's in its
// client-final message (Kafka accepts a nonce that ends with the
// server's): the proof over what it sent is what counts.
func TestScramLibrdkafkaNonce(t *testing.T) {
	lookup := passwords(t, 4096, map[string]string{"alice": "wonderland"})
	s := newScramLogin(acl.ScramSHA256, []byte("secret"), lookup)
	reply, _, err := s.next([]byte("n,,n=alice,r=cn"))
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.TrimPrefix(strings.Split(string(reply), ",")[0], "r=")
	cred, _ := lookup("alice", acl.ScramSHA256)
	salted, _ := acl.SaltPassword(acl.ScramSHA256, "wonderland", cred.Salt, 4096)
	withoutProof := "c=biws,r=cn" + nonce
	auth := "n=alice,r=cn," + string(reply) + "," + withoutProof
	clientKey := acl.ScramHMAC(sha256.New, salted, []byte("Client Key"))
	signature := acl.ScramHMAC(sha256.New, cred.StoredKey, []byte(auth))
	subtle.XORBytes(signature, signature, clientKey)
	if _, done, err := s.next([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(signature))); err != nil || !done {
		t.Errorf("librdkafka's client-final: %v", err)
	}
}

// Every malformed or wrong message refuses the login; a user without a
// password is shown the same salt each time and fails at the proof.
func TestScramRefusals(t *testing.T) {
	lookup := passwords(t, 4096, map[string]string{"alice": "wonderland", "a,b=c": "odd"})
	first := func(msg string) (*scramLogin, string, error) {
		s := newScramLogin(acl.ScramSHA512, []byte("secret"), lookup)
		reply, _, err := s.next([]byte(msg))
		return s, string(reply), err
	}
	for _, msg := range []string{
		"", "n", "n,,", "n,,r=abc", "n,,n=alice", "n,,n=alice,r=",
		"p=tls-unique,,n=alice,r=abc",     // channel binding
		"n,a=bob,n=alice,r=abc",           // acting as another user
		"n,,n=al=ice,r=abc",               // a bare '='
		"n,,n=alice,r=a b",                // a nonce that is not printable
		"n,,n=alice,r=abc,tokenauth=true", // delegation tokens
	} {
		if _, _, err := first(msg); !errors.Is(err, errSCRAM) {
			t.Errorf("client-first %q: %v", msg, err)
		}
	}
	if s, _, err := first("n,,n=a=2Cb=3Dc,r=abc"); err != nil || s.user != "a,b=c" || !s.known {
		t.Errorf("an escaped name: %q %v %v", s.user, s.known, err)
	}
	if _, _, err := first("y,a=alice,n=alice,r=abc"); err != nil {
		t.Errorf("authzid of the user itself: %v", err)
	}

	_, ghost1, _ := first("n,,n=ghost,r=abc")
	_, ghost2, _ := first("n,,n=ghost,r=abd")
	salt := func(reply string) string { return strings.Split(reply, ",")[1] }
	if salt(ghost1) != salt(ghost2) || !strings.HasSuffix(ghost1, ",i=4096") {
		t.Errorf("a user without a password: %q then %q", ghost1, ghost2)
	}

	s, reply, err := first("n,,n=alice,r=abc")
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.TrimPrefix(strings.Split(reply, ",")[0], "r=")
	wrongProof := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 64))
	for _, msg := range []string{
		"c=biws,r=" + nonce + ",p=" + wrongProof,          // a wrong password
		"c=biws,r=" + nonce + "x,p=" + wrongProof,         // another nonce
		"c=eSws,r=" + nonce + ",p=" + wrongProof,          // another GS2 header
		"c=biws,r=" + nonce + ",p=AAAA",                   // a short proof
		"c=biws,r=" + nonce,                               // no proof
		"c=biws,r=" + nonce + ",p=" + wrongProof + ",x=y", // the proof not last
	} {
		s2 := *s
		if _, _, err := s2.next([]byte(msg)); !errors.Is(err, errSCRAM) {
			t.Errorf("client-final %q: %v", msg, err)
		}
	}
}

// franz-go logs in with SCRAM-SHA-256 and SCRAM-SHA-512 over the listener
// (checking the server's signature); a wrong password and a user without
// one are SASL_AUTHENTICATION_FAILED. SCRAM is offered only when the
// listener has a credential lookup.
func TestSASLScramLoginWithFranzGo(t *testing.T) {
	lookup := passwords(t, 4096, map[string]string{"alice": "wonderland"})
	_, addr := startServer(t, oneAnswer(testMetadata()), Config{SASL: true, Scram: lookup})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := func(mech kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), mech, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	good := scram.Auth{User: "alice", Pass: "wonderland"}
	if err := login(kgo.SASL(good.AsSha256Mechanism())); err != nil {
		t.Errorf("SCRAM-SHA-256: %v", err)
	}
	if err := login(kgo.SASL(good.AsSha512Mechanism())); err != nil {
		t.Errorf("SCRAM-SHA-512: %v", err)
	}
	for _, bad := range []scram.Auth{{User: "alice", Pass: "wrong"}, {User: "ghost", Pass: "wonderland"}} {
		if err := login(kgo.SASL(bad.AsSha512Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s/%s: %v", bad.User, bad.Pass, err)
		}
	}

	_, plainOnly := startServer(t, oneAnswer(testMetadata()), Config{SASL: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(plainOnly), kgo.SASL(good.AsSha256Mechanism()), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Errorf("SCRAM on a listener without passwords: %v", err)
	}
}

// Any two messages a client sends as a SCRAM login are taken without a
// panic, and no made-up conversation logs in.
func FuzzScramLogin(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("n,,n=a=2Cb,r=x,ext=1"), []byte(""))
	lookup := passwords(f, 4096, map[string]string{"alice": "wonderland"})
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := newScramLogin(acl.ScramSHA256, []byte("secret"), lookup)
		if _, _, err := s.next(first); err != nil {
			return
		}
		if _, done, err := s.next(final); done || err == nil {
			t.Fatalf("logged in with %q then %q", first, final)
		}
	})
}

// With a session lifetime (KIP-368) the login's answer says how long the
// session lasts and franz-go logs in again on the same connection before
// it ends: requests over several lifetimes all succeed on one connection,
// with a login for each lifetime.
func TestSASLSessionsAreRenewedByFranzGo(t *testing.T) {
	lookup := passwords(t, 4096, map[string]string{"alice": "wonderland"})
	var logins atomic.Int32
	counted := func(user string, mech int32) (*messages.ScramCredential, bool) {
		logins.Add(1)
		return lookup(user, mech)
	}
	_, addr := startServer(t, oneAnswer(testMetadata()), Config{SASL: true, Scram: counted, SessionLifetime: 2 * time.Second})
	var connects atomic.Int32
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "alice", Pass: "wonderland"}.AsSha256Mechanism()),
		kgo.WithHooks(connectHook{&connects}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seed := cl.SeedBrokers()[0]
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(100 * time.Millisecond) {
		if _, err := seed.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
	}
	if connects.Load() != 1 || logins.Load() < 3 {
		t.Errorf("%d connections, %d logins: want one connection logged in again", connects.Load(), logins.Load())
	}
}

type connectHook struct{ n *atomic.Int32 }

func (h connectHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.n.Add(1)
	}
}
