package server

import (
	"crypto"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluicemq/sluice/acl"
)

// jwksFile checks OAUTHBEARER tokens against the keys of a JWKS file,
// read again when it changes (a key rotation needs no restart). Safe for
// concurrent use.
type jwksFile struct {
	path             string
	issuer, audience string

	mu      sync.Mutex
	modTime time.Time
	keys    map[string]crypto.PublicKey
}

// newJWKSFile reads the JWKS file at path (or file:// URL, as Kafka's
// sasl.oauthbearer.jwks.endpoint.url names one).
func newJWKSFile(path, issuer, audience string) (*jwksFile, error) {
	if rest, ok := strings.CutPrefix(path, "file://"); ok {
		path = rest
	} else if strings.Contains(path, "://") {
		return nil, fmt.Errorf("JWKS %q: only a local file is read (a path or a file:// URL)", path)
	}
	j := &jwksFile{path: path, issuer: issuer, audience: audience}
	if _, err := j.current(); err != nil {
		return nil, err
	}
	return j, nil
}

// current returns the file's keys, read again if it changed.
func (j *jwksFile) current() (map[string]crypto.PublicKey, error) {
	st, err := os.Stat(j.path)
	if err != nil {
		return nil, fmt.Errorf("JWKS file: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.keys != nil && st.ModTime().Equal(j.modTime) {
		return j.keys, nil
	}
	data, err := os.ReadFile(j.path)
	if err != nil {
		return nil, fmt.Errorf("JWKS file: %w", err)
	}
	keys, err := acl.ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("JWKS file %s: %w", j.path, err)
	}
	j.keys, j.modTime = keys, st.ModTime()
	return keys, nil
}

// verify checks token now and returns its principal and expiry.
func (j *jwksFile) verify(token string) (string, time.Time, error) {
	keys, err := j.current()
	if err != nil {
		return "", time.Time{}, err
	}
	sub, expires, err := acl.VerifyJWT(token, keys, j.issuer, j.audience, time.Now())
	return "User:" + sub, expires, err
}
