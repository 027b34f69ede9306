package acl

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
)

var tokenFormat = regexp.MustCompile(`^sluice_[A-Za-z0-9_-]{43}$`)

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if !tokenFormat.MatchString(tok) {
			t.Fatalf("token %q does not look like sluice_ + 43 base64url characters", tok)
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, "sluice_"))
		if err != nil || len(raw) != 32 {
			t.Fatalf("token %q: %d bytes, %v", tok, len(raw), err)
		}
		if seen[tok] {
			t.Fatalf("token %q repeated", tok)
		}
		seen[tok] = true
	}
}

func TestHashToken(t *testing.T) {
	// SHA-256 test vectors (FIPS 180-2).
	vectors := map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	}
	for in, want := range vectors {
		if got := HashToken(in); got != want {
			t.Errorf("HashToken(%q) = %s, want %s", in, got, want)
		}
	}
	tok, _ := NewToken()
	if err := validTokenHash(HashToken(tok)); err != nil {
		t.Errorf("HashToken output fails its own check: %v", err)
	}
}
