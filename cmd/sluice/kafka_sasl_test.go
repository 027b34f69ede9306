package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
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

	pem, err := os.ReadFile(certs.file("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	serverOnly := kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
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
}
