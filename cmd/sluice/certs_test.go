package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCertsCLI runs the CLI in-process, unlike runCLI which runs the binary:
// certs needs no broker, and this keeps the tests fast.
func runCertsCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func readPEM(t *testing.T, path, wantType string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(data)
	if block == nil || block.Type != wantType {
		t.Fatalf("%s: want one %q PEM block, got %v", path, wantType, block)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("%s: trailing data after the PEM block", path)
	}
	return block.Bytes
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, err := x509.ParseCertificate(readPEM(t, path, "CERTIFICATE"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cert
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

// checkLeaf verifies a broker or user certificate the way both ends of a
// mutual-TLS connection will: as a server and as a client certificate.
func checkLeaf(t *testing.T, dir, base, wantCN, wantURI string, pool *x509.CertPool, now time.Time, days int) {
	t.Helper()
	certPath, keyPath := filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key")
	checkMode(t, certPath, 0o644)
	checkMode(t, keyPath, 0o600)
	cert := readCert(t, certPath)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		// One usage per call: Verify accepts a chain valid for any listed usage.
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s: verify for usage %v: %v", base, usage, err)
		}
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("%s: %v", base, err)
		}
	}
	if cert.Subject.CommonName != wantCN {
		t.Errorf("%s: CN %q, want %q", base, cert.Subject.CommonName, wantCN)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != wantURI {
		t.Errorf("%s: URI SANs %v, want [%s]", base, cert.URIs, wantURI)
	}
	if cert.IsCA {
		t.Errorf("%s: leaf is a CA", base)
	}
	if cert.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		t.Errorf("%s: no DigitalSignature key usage", base)
	}
	if cert.SerialNumber.BitLen() < 64 {
		t.Errorf("%s: serial %v looks not random", base, cert.SerialNumber)
	}
	checkValidity(t, base, cert, now, days)

	// PKCS#8 as documented, and a pair tls can load.
	if _, err := x509.ParsePKCS8PrivateKey(readPEM(t, keyPath, "PRIVATE KEY")); err != nil {
		t.Errorf("%s: %v", keyPath, err)
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatalf("%s: X509KeyPair: %v", base, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		t.Errorf("%s: key %T, want ECDSA P-256", base, pair.PrivateKey)
	}
}

func checkValidity(t *testing.T, name string, cert *x509.Certificate, now time.Time, days int) {
	t.Helper()
	const slack = time.Minute
	wantBefore, wantAfter := now.Add(-time.Hour), now.Add(time.Duration(days)*24*time.Hour)
	if d := cert.NotBefore.Sub(wantBefore); d < -slack || d > slack {
		t.Errorf("%s: NotBefore %v, want about %v", name, cert.NotBefore, wantBefore)
	}
	if d := cert.NotAfter.Sub(wantAfter); d < -slack || d > slack {
		t.Errorf("%s: NotAfter %v, want about %v", name, cert.NotAfter, wantAfter)
	}
}

func TestCertsDev(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs") // does not exist yet
	now := time.Now()
	code, stdout, stderr := runCertsCLI(t, "certs", "dev", "--out", dir, "--users", "admin,alice")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkMode(t, dir, 0o700)
	checkMode(t, filepath.Join(dir, "ca.crt"), 0o644)
	checkMode(t, filepath.Join(dir, "ca.key"), 0o600)

	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	if !ca.IsCA || !ca.BasicConstraintsValid || !ca.MaxPathLenZero || ca.MaxPathLen != 0 {
		t.Errorf("CA constraints: IsCA %v valid %v MaxPathLen %d zero %v",
			ca.IsCA, ca.BasicConstraintsValid, ca.MaxPathLen, ca.MaxPathLenZero)
	}
	if want := x509.KeyUsageCertSign | x509.KeyUsageCRLSign; ca.KeyUsage != want {
		t.Errorf("CA key usage %v, want %v", ca.KeyUsage, want)
	}
	if !strings.HasPrefix(ca.Subject.CommonName, "sluice dev CA ") || len(ca.Subject.CommonName) <= len("sluice dev CA ") {
		t.Errorf("CA CN %q", ca.Subject.CommonName)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		t.Errorf("CA not self-signed: %v", err)
	}
	checkValidity(t, "ca", ca, now, 30)
	caKey, err := x509.ParsePKCS8PrivateKey(readPEM(t, filepath.Join(dir, "ca.key"), "PRIVATE KEY"))
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := caKey.(*ecdsa.PrivateKey); !ok || !k.PublicKey.Equal(ca.PublicKey) {
		t.Errorf("ca.key does not match ca.crt")
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for id := 1; id <= 3; id++ {
		checkLeaf(t, dir, fmt.Sprintf("broker-%d", id), fmt.Sprintf("sluice-broker-%d", id),
			fmt.Sprintf("sluice://broker/%d", id), pool, now, 30)
	}
	for _, u := range []string{"admin", "alice"} {
		checkLeaf(t, dir, "user-"+u, u, "sluice://user/"+u, pool, now, 30)
	}
	if _, err := os.Stat(filepath.Join(dir, "broker-4.crt")); err == nil {
		t.Errorf("broker-4.crt written for --brokers 3")
	}

	for _, want := range []string{
		"wrote CA, 3 broker and 2 user certificates to " + dir + "\n",
		"sluice broker --id 2 --tls-cert " + filepath.Join(dir, "broker-2.crt") + " --tls-key " + filepath.Join(dir, "broker-2.key") +
			" --tls-ca " + filepath.Join(dir, "ca.crt") + " --super-users User:admin",
		"export SLUICE_TLS_CERT=" + filepath.Join(dir, "user-alice.crt") + " SLUICE_TLS_KEY=" + filepath.Join(dir, "user-alice.key") +
			" SLUICE_TLS_CA=" + filepath.Join(dir, "ca.crt") + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCertsDevRelativeOutFirstIDDays(t *testing.T) {
	t.Chdir(t.TempDir())
	now := time.Now()
	code, stdout, stderr := runCertsCLI(t, "certs", "dev", "--out", "tls", "--first-id", "5", "--brokers", "2", "--days", "2", "--users", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	abs, err := filepath.Abs("tls")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, "wrote CA, 2 broker and 0 user certificates to "+abs+"\n") {
		t.Errorf("stdout does not name the absolute dir %s:\n%s", abs, stdout)
	}
	if strings.Contains(stdout, "--super-users") || strings.Contains(stdout, "as user") {
		t.Errorf("stdout mentions users though none were made:\n%s", stdout)
	}
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, filepath.Join(abs, "ca.crt")))
	for _, id := range []int{5, 6} {
		checkLeaf(t, abs, fmt.Sprintf("broker-%d", id), fmt.Sprintf("sluice-broker-%d", id),
			fmt.Sprintf("sluice://broker/%d", id), pool, now, 2)
	}
	matches, _ := filepath.Glob(filepath.Join(abs, "*"))
	if len(matches) != 6 { // ca.crt, ca.key and two pairs; no leftover temp files
		t.Errorf("files %v, want 6", matches)
	}
}

func TestCertsDevRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCertsCLI(t, "certs", "dev", "--out", dir, "--brokers", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	snapshot := func() map[string]string {
		m := make(map[string]string)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			info, _ := e.Info()
			m[e.Name()] = fmt.Sprintf("%v %v %x", info.Mode(), info.ModTime().UnixNano(), data)
		}
		return m
	}
	before := snapshot()

	code, stdout, stderr := runCertsCLI(t, "certs", "dev", "--out", dir, "--brokers", "1")
	if code != 1 {
		t.Errorf("second run: exit %d, want 1", code)
	}
	caPath := filepath.Join(dir, "ca.crt")
	if !strings.Contains(stderr, caPath+" already exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("second run: stderr %q does not say why or how to override", stderr)
	}
	if stdout != "" {
		t.Errorf("second run: stdout %q, want nothing", stdout)
	}
	after := snapshot()
	if len(after) != len(before) {
		t.Errorf("files changed: %d before, %d after", len(before), len(after))
	}
	for name, v := range before {
		if after[name] != v {
			t.Errorf("%s changed by a refused run", name)
		}
	}

	// A key loosened by hand must come back 0600 when --force replaces it.
	keyPath := filepath.Join(dir, "user-admin.key")
	if err := os.Chmod(keyPath, 0o644); err != nil {
		t.Fatal(err)
	}
	oldCA := readCert(t, caPath)
	if code, _, stderr := runCertsCLI(t, "certs", "dev", "--out", dir, "--brokers", "1", "--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	checkMode(t, keyPath, 0o600)
	newCA := readCert(t, caPath)
	if newCA.Equal(oldCA) || newCA.Subject.CommonName == oldCA.Subject.CommonName {
		t.Errorf("--force kept the old CA %q", oldCA.Subject.CommonName)
	}
	pool := x509.NewCertPool()
	pool.AddCert(newCA)
	checkLeaf(t, dir, "broker-1", "sluice-broker-1", "sluice://broker/1", pool, time.Now(), 30)
}

func TestCertsUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"certs"}, "dev"},
		{[]string{"certs", "prod"}, "dev"},
		{[]string{"certs", "dev"}, "--out"},
		{[]string{"certs", "dev", "--out", dir, "extra"}, "extra"},
		{[]string{"certs", "dev", "--out", dir, "--users", "ad min"}, "ad min"},
		{[]string{"certs", "dev", "--out", dir, "--users", "../x"}, "../x"},
		{[]string{"certs", "dev", "--out", dir, "--users", "a,,b"}, "empty"},
		{[]string{"certs", "dev", "--out", dir, "--users", "a,a"}, "twice"},
		// The rule of token users' names: User:* means every user.
		{[]string{"certs", "dev", "--out", dir, "--users", "*"}, "reserved"},
		{[]string{"certs", "dev", "--out", dir, "--users", strings.Repeat("n", 129)}, "limit is 128"},
		{[]string{"certs", "dev", "--out", dir, "--days", "0"}, "days"},
		{[]string{"certs", "dev", "--out", dir, "--brokers", "-1"}, "brokers"},
		{[]string{"certs", "dev", "--out", dir, "--first-id", "-1"}, "first-id"},
		{[]string{"certs", "dev", "--out", dir, "--first-id", "2147483647", "--brokers", "2"}, "out of range"},
	} {
		code, _, stderr := runCertsCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("usage errors wrote files: %v", entries)
	}
}

// TestCertsBadCertificates checks that the helpers make the bad certificates
// the TLS tests need, and that they fail for the expected reason.
func TestCertsBadCertificates(t *testing.T) {
	now := time.Now()
	ca, err := newDevCA(now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	other, err := newDevCA(now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	verify := func(certPEM []byte, usage x509.ExtKeyUsage) error {
		t.Helper()
		block, _ := pem.Decode(certPEM)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cert.Verify(x509.VerifyOptions{Roots: ca.pool(), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	mustIssue := func(certPEM, keyPEM []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		return certPEM
	}

	if err := verify(mustIssue(ca.issueUser("admin", now.Add(-time.Hour), now.Add(time.Hour))), x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("good user: %v", err)
	}
	var invalid x509.CertificateInvalidError
	expired := mustIssue(ca.issueBroker(1, now.Add(-2*time.Hour), now.Add(-time.Hour)))
	if err := verify(expired, x509.ExtKeyUsageServerAuth); !errors.As(err, &invalid) || invalid.Reason != x509.Expired {
		t.Errorf("expired broker: %v, want Expired", err)
	}
	var unknown x509.UnknownAuthorityError
	foreign := mustIssue(other.issueUser("admin", now.Add(-time.Hour), now.Add(time.Hour)))
	if err := verify(foreign, x509.ExtKeyUsageClientAuth); !errors.As(err, &unknown) {
		t.Errorf("user from another CA: %v, want UnknownAuthorityError", err)
	}
	serverOnly := mustIssue(ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "mallory"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}))
	if err := verify(serverOnly, x509.ExtKeyUsageClientAuth); !errors.As(err, &invalid) || invalid.Reason != x509.IncompatibleUsage {
		t.Errorf("server-only cert as client: %v, want IncompatibleUsage", err)
	}
	if _, _, err := ca.issueUser("a/b", now, now.Add(time.Hour)); err == nil {
		t.Errorf("issueUser accepted a name that breaks the URI SAN")
	}
	if _, _, err := ca.issueBroker(-1, now, now.Add(time.Hour)); err == nil {
		t.Errorf("issueBroker accepted id -1")
	}
}

// TestCertsMutualTLSHandshake checks that a broker and a user pair really
// work together for mutual TLS and that the peer's URI SAN comes through.
func TestCertsMutualTLSHandshake(t *testing.T) {
	now := time.Now()
	ca, err := newDevCA(now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pair := func(certPEM, keyPEM []byte, err error) tls.Certificate {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	brokerPair := pair(ca.issueBroker(7, now.Add(-time.Hour), now.Add(time.Hour)))
	userPair := pair(ca.issueUser("alice", now.Add(-time.Hour), now.Add(time.Hour)))

	c1, c2 := net.Pipe()
	server := tls.Server(c1, &tls.Config{
		Certificates: []tls.Certificate{brokerPair},
		ClientCAs:    ca.pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})
	client := tls.Client(c2, &tls.Config{
		Certificates: []tls.Certificate{userPair},
		RootCAs:      ca.pool(),
		ServerName:   "127.0.0.1",
	})
	// Close the pipe itself: tls.Conn.Close would block sending close_notify
	// to a peer that no longer reads.
	defer c1.Close()
	defer c2.Close()
	done := make(chan error, 1)
	go func() { done <- server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	if got := server.ConnectionState().PeerCertificates[0].URIs; len(got) != 1 || got[0].String() != "sluice://user/alice" {
		t.Errorf("server saw client URIs %v", got)
	}
	if got := client.ConnectionState().PeerCertificates[0].URIs; len(got) != 1 || got[0].String() != "sluice://broker/7" {
		t.Errorf("client saw server URIs %v", got)
	}
}
