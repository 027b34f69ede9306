package server

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func jwksOf(t *testing.T) ([]byte, *rsa.PublicKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "k", "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}}})
	return doc, &k.PublicKey
}

// The JWKS file is read again when it changes (a key rotation needs no
// restart); a file:// URL names a file; a URL of anything else, a missing
// file or one without keys is refused.
func TestJWKSFileIsReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jwks.json")
	first, firstKey := jwksOf(t)
	if err := os.WriteFile(path, first, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := newJWKSFile("file://"+path, "", "")
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := j.current()
	if keys["k"].(*rsa.PublicKey).N.Cmp(firstKey.N) != 0 {
		t.Fatal("not the file's key")
	}
	second, secondKey := jwksOf(t)
	if err := os.WriteFile(path, second, 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	os.Chtimes(path, later, later)
	if keys, err := j.current(); err != nil || keys["k"].(*rsa.PublicKey).N.Cmp(secondKey.N) != 0 {
		t.Errorf("after the file changed: %v", err)
	}
	if _, _, err := j.verify("not.a.token"); err == nil {
		t.Error("a bad token verified")
	}
	for _, bad := range []string{"https://idp.example/jwks", filepath.Join(t.TempDir(), "missing.json")} {
		if _, err := newJWKSFile(bad, "", ""); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(empty, []byte(`{"keys":[]}`), 0o600)
	if _, err := newJWKSFile(empty, "", ""); err == nil || !strings.Contains(err.Error(), "no RSA or EC") {
		t.Errorf("a JWKS without keys: %v", err)
	}
}
