package acl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// oauthKeys are an RSA and an EC signing key with their JWKS document.
type oauthKeys struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	jwks []byte
}

func newOAuthKeys(t testing.TB) oauthKeys {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "r1", "use": "sig", "n": enc(rk.N.Bytes()), "e": enc(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "crv": "P-256", "x": enc(ek.X.FillBytes(make([]byte, 32))), "y": enc(ek.Y.FillBytes(make([]byte, 32)))},
		{"kty": "oct", "kid": "secret", "k": "c2VjcmV0"}, // skipped
	}})
	return oauthKeys{rsa: rk, ec: ek, jwks: jwks}
}

// SignJWT signs claims as a JWT with alg (RS256 or ES256) and key id kid.
func (k oauthKeys) sign(t testing.TB, alg, kid string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	header, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	body, _ := json.Marshal(claims)
	signed := enc(header) + "." + enc(body)
	digest := hashOf(crypto.SHA256, []byte(signed))
	var sig []byte
	switch alg {
	case "RS256":
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, crypto.SHA256, digest); err != nil {
			t.Fatal(err)
		}
	case "ES256":
		r, s, err := ecdsa.Sign(rand.Reader, k.ec, digest)
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	return signed + "." + enc(sig)
}

// Tokens signed by a key of the JWKS, unexpired, of the configured issuer
// and audience, with a subject, are accepted; everything else is refused
// saying why.
func TestOAuthVerifier(t *testing.T) {
	keys := newOAuthKeys(t)
	parsed, err := ParseJWKS(keys.jwks)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(token string, now time.Time) (string, time.Time, error) {
		return VerifyJWT(token, parsed, "https://idp.example", "sluice", now)
	}
	now := time.Unix(1_800_000_000, 0)
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "alice", "iss": "https://idp.example", "aud": []string{"other", "sluice"},
			"exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	for _, alg := range []struct{ alg, kid string }{{"RS256", "r1"}, {"ES256", "e1"}} {
		sub, exp, err := verify(keys.sign(t, alg.alg, alg.kid, claims(nil)), now)
		if err != nil || sub != "alice" || !exp.Equal(now.Add(time.Hour)) {
			t.Errorf("%s: %q %v %v", alg.alg, sub, exp, err)
		}
	}
	other := newOAuthKeys(t)
	good := keys.sign(t, "RS256", "r1", claims(nil))
	for name, token := range map[string]string{
		"another key":        other.sign(t, "RS256", "r1", claims(nil)),
		"an unknown key id":  keys.sign(t, "RS256", "r9", claims(nil)),
		"RS256 on an EC key": keys.sign(t, "RS256", "e1", claims(nil)),
		"expired":            keys.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"no exp":             keys.sign(t, "RS256", "r1", claims(func(c map[string]any) { delete(c, "exp") })),
		"not yet valid":      keys.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })),
		"another issuer":     keys.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["iss"] = "https://evil.example" })),
		"another audience":   keys.sign(t, "RS256", "r1", claims(func(c map[string]any) { c["aud"] = "kafka" })),
		"no subject":         keys.sign(t, "RS256", "r1", claims(func(c map[string]any) { delete(c, "sub") })),
		"a changed claim":    strings.Replace(good, strings.Split(good, ".")[1], base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"root","exp":9999999999}`)), 1),
		"unsigned":           strings.Join(strings.Split(good, ".")[:2], ".") + ".",
		"alg none":           base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + strings.Split(good, ".")[1] + ".",
		"not a JWT":          "sluice_token",
	} {
		if _, _, err := verify(token, now); !errors.Is(err, ErrOAuthToken) {
			t.Errorf("%s: %v", name, err)
		}
	}

	for _, bad := range []string{`{"keys":[]}`, `not json`, `{"keys":[{"kty":"RSA","kid":"x","n":"AQAB","e":"AQAB"}]}`} {
		if _, err := ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("JWKS %s accepted", bad)
		}
	}
}

// Any token is checked without a panic, and none made up is accepted.
func FuzzVerifyJWT(f *testing.F) {
	keys := newOAuthKeys(f)
	parsed, err := ParseJWKS(keys.jwks)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(keys.sign(f, "RS256", "r1", map[string]any{"sub": "a", "exp": 2_000_000_000}))
	f.Add("e30.e30.")
	f.Fuzz(func(t *testing.T, token string) {
		sub, _, err := VerifyJWT(token, parsed, "", "", time.Unix(1_800_000_000, 0))
		if err == nil && sub == "" {
			t.Fatalf("%q accepted without a subject", token)
		}
	})
}
