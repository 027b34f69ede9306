package acl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// tokenPrefix starts every token, so that a leaked one is recognisable
// (secret scanners) and cannot be mistaken for a password.
const tokenPrefix = "sluice_"

// tokenBytes of randomness: 256 bits, 43 characters of base64url.
const tokenBytes = 32

// NewToken returns a fresh bearer token: "sluice_" + 43 chars of base64url
// (no padding) of 32 bytes from crypto/rand.
func NewToken() (string, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reading random bytes for a token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashToken is the lowercase hex SHA-256 of the token: what the record
// stores and TokenUsers is keyed by. The token is high-entropy, so a plain
// hash (no salt, no stretching) is enough.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// validTokenHash checks h is 64 lowercase hex digits, as HashToken makes.
func validTokenHash(h string) error {
	if len(h) != 2*sha256.Size {
		return fmt.Errorf("token hash has %d characters; want %d lowercase hex digits (SHA-256)", len(h), 2*sha256.Size)
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("token hash contains %q; want lowercase hex digits only", c)
		}
	}
	return nil
}
