package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/storage/atomicfile"
)

// runCerts dispatches `sluice certs SUBCOMMAND`.
func runCerts(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("want a subcommand: dev")
	}
	switch args[0] {
	case "dev":
		return runCertsDev(args[1:], stdout, stderr)
	default:
		return usageErr("unknown subcommand %q: want dev", args[0])
	}
}

// runCertsDev writes a throwaway CA plus broker and user certificates, so a
// mutual-TLS cluster can be tried without setting up a real PKI.
func runCertsDev(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("certs dev", stdout, stderr)
	out := fs.String("out", "", "directory to write the CA, keys and certificates to (created 0700 if missing)")
	brokers := fs.Int("brokers", 3, "number of broker certificates")
	firstID := fs.Int("first-id", 1, "broker id of the first broker certificate")
	users := fs.String("users", "admin", "comma-separated user names; the first is suggested as super-user")
	days := fs.Int("days", 30, "days the certificates stay valid")
	force := fs.Bool("force", false, "overwrite an existing CA in --out")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected arguments %q", pos)
	}
	if *out == "" {
		return usageErr("--out DIR is required")
	}
	if *firstID < 0 || *firstID > math.MaxInt32 {
		return usageErr("--first-id %d: want 0 to %d", *firstID, math.MaxInt32)
	}
	names, err := parseUserList(*users)
	if err != nil {
		return usageErr("--users: %v", err)
	}
	if err := checkDevCertArgs(int32(*firstID), *brokers, names, *days); err != nil {
		return usageErr("%v", err)
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := writeDevCerts(dir, int32(*firstID), *brokers, names, *days, *force); err != nil {
		return err
	}
	printDevCertsUsage(stdout, dir, int32(*firstID), *brokers, names)
	return nil
}

// parseUserList splits --users; an empty flag means no user certificates.
func parseUserList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var names []string
	for _, n := range strings.Split(s, ",") {
		names = append(names, strings.TrimSpace(n))
	}
	return names, nil
}

func checkDevCertArgs(firstID int32, brokers int, users []string, days int) error {
	if firstID < 0 {
		return fmt.Errorf("first broker id %d: want 0 or more", firstID)
	}
	if brokers < 0 || int64(firstID)+int64(brokers)-1 > math.MaxInt32 {
		return fmt.Errorf("%d brokers from id %d: out of range", brokers, firstID)
	}
	if days < 1 {
		return fmt.Errorf("%d days: want 1 or more", days)
	}
	seen := make(map[string]bool)
	for _, u := range users {
		// One rule for every user name, token or certificate: the
		// characters it allows are safe in a file name (user-NAME.crt) and
		// a URI path (sluice://user/NAME) without escaping, so the
		// principal the transport derives is exactly User:NAME.
		if err := acl.ValidUserName(u); err != nil {
			return err
		}
		if seen[u] {
			return fmt.Errorf("user %q listed twice", u)
		}
		seen[u] = true
	}
	return nil
}

// devCA is a throwaway certificate authority for local clusters and tests.
type devCA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
}

// newDevCA makes a self-signed CA. Its name carries random hex so that CAs
// from different runs are told apart when a stale certificate is rejected.
func newDevCA(notBefore, notAfter time.Time) (*devCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tag := make([]byte, 4)
	if _, err := rand.Read(tag); err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sluice dev CA " + hex.EncodeToString(tag)},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		// Only leaves below it: a leaked dev CA key cannot mint sub-CAs.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &devCA{Cert: cert, Key: key, CertPEM: pemCert(der)}, nil
}

// pool is a CertPool holding only this CA, for verifying its leaves.
func (ca *devCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// brokerURI and userURI are the SANs the transport maps to Broker:N and
// User:NAME.
func brokerURI(id int32) *url.URL {
	return &url.URL{Scheme: "sluice", Host: "broker", Path: "/" + strconv.FormatInt(int64(id), 10)}
}

func userURI(name string) *url.URL {
	return &url.URL{Scheme: "sluice", Host: "user", Path: "/" + name}
}

// loopback lets certificates serve TLS on local listeners: brokers, and
// clients too, since brokers dial back to clients.
var loopback = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}

// issueBroker makes the certificate and key of broker id.
func (ca *devCA) issueBroker(id int32, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	if id < 0 {
		return nil, nil, fmt.Errorf("broker id %d: want 0 or more", id)
	}
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: fmt.Sprintf("sluice-broker-%d", id)},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		URIs:        []*url.URL{brokerURI(id)},
		DNSNames:    []string{"localhost"},
		IPAddresses: loopback,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		// Explicitly not a CA, so a leaked leaf key cannot sign others.
		BasicConstraintsValid: true,
	})
}

// issueUser makes the certificate and key of user name.
func (ca *devCA) issueUser(name string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	if err := acl.ValidUserName(name); err != nil {
		return nil, nil, err
	}
	return ca.issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		URIs:                  []*url.URL{userURI(name)},
		DNSNames:              []string{"localhost"},
		IPAddresses:           loopback,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	})
}

// issue signs tmpl for a fresh P-256 key and returns both as PEM. It checks
// nothing about tmpl, so tests can make deliberately bad certificates (no
// URI SAN, wrong usages, expired); a missing serial is filled in.
func (ca *devCA) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	t := *tmpl
	if t.SerialNumber == nil {
		if t.SerialNumber, err = randomSerial(); err != nil {
			return nil, nil, err
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, &t, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// randomSerial returns a random positive 128-bit serial number; RFC 5280
// wants serials positive and unique per CA, which randomness gives us
// without keeping state.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, err
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// writeDevCerts writes a new CA and broker and user certificates into dir:
// ca.crt, ca.key, broker-N.crt/.key for N = firstID.., user-NAME.crt/.key.
// It refuses to replace an existing ca.crt unless force is set, so a second
// run does not silently strand a running cluster on a CA nobody has anymore.
func writeDevCerts(dir string, firstID int32, brokers int, users []string, days int, force bool) error {
	if err := checkDevCertArgs(firstID, brokers, users, days); err != nil {
		return err
	}
	caPath := filepath.Join(dir, "ca.crt")
	if !force {
		if _, err := os.Lstat(caPath); err == nil {
			return fmt.Errorf("%s already exists; pass --force to replace the CA and all certificates", caPath)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	// An hour of slack so that clocks a little behind still accept them.
	notBefore, notAfter := now.Add(-time.Hour), now.Add(time.Duration(days)*24*time.Hour)
	ca, err := newDevCA(notBefore, notAfter)
	if err != nil {
		return err
	}
	caKey, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: caKey}), 0o600, true); err != nil {
		return err
	}
	writePair := func(base string, certPEM, keyPEM []byte) error {
		if err := atomicfile.Write(filepath.Join(dir, base+".key"), keyPEM, 0o600, true); err != nil {
			return err
		}
		return atomicfile.Write(filepath.Join(dir, base+".crt"), certPEM, 0o644, true)
	}
	for i := range brokers {
		id := firstID + int32(i)
		certPEM, keyPEM, err := ca.issueBroker(id, notBefore, notAfter)
		if err != nil {
			return err
		}
		if err := writePair(fmt.Sprintf("broker-%d", id), certPEM, keyPEM); err != nil {
			return err
		}
	}
	for _, u := range users {
		certPEM, keyPEM, err := ca.issueUser(u, notBefore, notAfter)
		if err != nil {
			return err
		}
		if err := writePair("user-"+u, certPEM, keyPEM); err != nil {
			return err
		}
	}
	// ca.crt goes last: it marks a complete set, so an interrupted run
	// does not leave a directory that needs --force to repair.
	return atomicfile.Write(caPath, ca.CertPEM, 0o644, true)
}

// printDevCertsUsage tells the user what was written and the flags and
// environment that use it.
func printDevCertsUsage(w io.Writer, dir string, firstID int32, brokers int, users []string) {
	fmt.Fprintf(w, "wrote CA, %d broker and %d user certificates to %s\n", brokers, len(users), dir)
	p := func(name string) string { return shellQuote(filepath.Join(dir, name)) }
	super := ""
	if len(users) > 0 {
		super = " --super-users User:" + users[0]
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := range brokers {
		id := firstID + int32(i)
		fmt.Fprintf(tw, "start broker %d:\tsluice broker --id %d --tls-cert %s --tls-key %s --tls-ca %s%s ...\n",
			id, id, p(fmt.Sprintf("broker-%d.crt", id)), p(fmt.Sprintf("broker-%d.key", id)), p("ca.crt"), super)
	}
	for _, u := range users {
		fmt.Fprintf(tw, "as user %s:\texport SLUICE_TLS_CERT=%s SLUICE_TLS_KEY=%s SLUICE_TLS_CA=%s\n",
			u, p("user-"+u+".crt"), p("user-"+u+".key"), p("ca.crt"))
	}
	tw.Flush()
}

// shellQuote makes printed paths safe to paste into a shell.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
