package acl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
	"unicode"
)

// OAUTHBEARER logins (RFC 7628) carry a JWT (RFC 7519) that an identity
// provider signed: VerifyJWT checks its signature against the keys of a
// JWKS document (RFC 7517), its expiry, and the issuer and audience when
// they are configured. The token's subject names the principal,
// User:SUBJECT, as Kafka's default validator does.

// oauthClockSkew is the leeway on exp and nbf (Kafka's
// sasl.oauthbearer.clock.skew.seconds).
const oauthClockSkew = 30 * time.Second

// ErrOAuthToken wraps every refused token.
var ErrOAuthToken = errors.New("OAUTHBEARER token refused")

// ParseJWKS reads the RSA and EC (P-256, P-384) public keys of a JWKS
// document, by key id; other key types are skipped.
func ParseJWKS(data []byte) (map[string]crypto.PublicKey, error) {
	var doc struct {
		Keys []struct {
			Kty, Kid, Use, Crv string
			N, E, X, Y         string
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	keys := map[string]crypto.PublicKey{}
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var key crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, err1 := b64int(k.N)
			e, err2 := b64int(k.E)
			if err1 != nil || err2 != nil || n.BitLen() < 2048 || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31 {
				return nil, fmt.Errorf("key %d (%q): a bad RSA key (at least 2048 bits)", i, k.Kid)
			}
			key = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384()}[k.Crv]
			x, err1 := b64int(k.X)
			y, err2 := b64int(k.Y)
			if curve == nil || err1 != nil || err2 != nil || !curve.IsOnCurve(x, y) {
				return nil, fmt.Errorf("key %d (%q): a bad EC key (P-256 or P-384)", i, k.Kid)
			}
			key = &ecdsa.PublicKey{Curve: curve, X: x, Y: y}
		default:
			continue
		}
		if _, dup := keys[k.Kid]; dup {
			return nil, fmt.Errorf("key id %q is used twice", k.Kid)
		}
		keys[k.Kid] = key
	}
	if len(keys) == 0 {
		return nil, errors.New("no RSA or EC signing key")
	}
	return keys, nil
}

func b64int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("not base64url")
	}
	return new(big.Int).SetBytes(b), nil
}

// VerifyJWT checks token at now against keys (by key id, as ParseJWKS
// returns them) and, when not empty, issuer and audience; it returns the
// token's subject and expiry.
func VerifyJWT(token string, keys map[string]crypto.PublicKey, issuer, audience string, now time.Time) (string, time.Time, error) {
	refuse := func(format string, args ...any) (string, time.Time, error) {
		return "", time.Time{}, fmt.Errorf("%w: %s", ErrOAuthToken, fmt.Sprintf(format, args...))
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return refuse("not a signed JWT (header.claims.signature)")
	}
	var header struct{ Alg, Kid string }
	if err := decodeSegment(parts[0], &header); err != nil {
		return refuse("header: %v", err)
	}
	key, ok := keys[header.Kid]
	if !ok && header.Kid == "" && len(keys) == 1 {
		for _, k := range keys {
			key, ok = k, true
		}
	}
	if !ok {
		return refuse("no key %q in the JWKS", header.Kid)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return refuse("signature is not base64url")
	}
	if err := verifySignature(header.Alg, key, []byte(parts[0]+"."+parts[1]), sig); err != nil {
		return refuse("%v", err)
	}
	var claims struct {
		Sub      string          `json:"sub"`
		Iss      string          `json:"iss"`
		Aud      json.RawMessage `json:"aud"`
		Exp, Nbf *float64
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return refuse("claims: %v", err)
	}
	switch {
	case claims.Exp == nil:
		return refuse("no exp claim")
	case now.After(unixTime(*claims.Exp).Add(oauthClockSkew)):
		return refuse("expired at %s", unixTime(*claims.Exp).UTC().Format(time.RFC3339))
	case claims.Nbf != nil && now.Add(oauthClockSkew).Before(unixTime(*claims.Nbf)):
		return refuse("not valid before %s", unixTime(*claims.Nbf).UTC().Format(time.RFC3339))
	case issuer != "" && claims.Iss != issuer:
		return refuse("issuer %q, want %q", claims.Iss, issuer)
	case audience != "" && !hasAudience(claims.Aud, audience):
		return refuse("audience is not %q", audience)
	case claims.Sub == "" || len(claims.Sub) > 255 || strings.IndexFunc(claims.Sub, unicode.IsControl) >= 0:
		return refuse("the sub claim is empty, longer than 255 bytes or has control characters")
	}
	return claims.Sub, unixTime(*claims.Exp), nil
}

func unixTime(f float64) time.Time { return time.Unix(0, int64(f*float64(time.Second))) }

func decodeSegment(s string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return errors.New("not base64url")
	}
	return json.Unmarshal(b, into)
}

// hasAudience reports whether aud (a string or a list) names want.
func hasAudience(aud json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == want
	}
	var many []string
	return json.Unmarshal(aud, &many) == nil && slices.Contains(many, want)
}

// verifySignature checks a JWS signature of alg (RS256/384/512,
// ES256/384) over signed with key.
func verifySignature(alg string, key crypto.PublicKey, signed, sig []byte) error {
	var h crypto.Hash
	switch alg {
	case "RS256", "ES256":
		h = crypto.SHA256
	case "RS384", "ES384":
		h = crypto.SHA384
	case "RS512":
		h = crypto.SHA512
	default:
		return fmt.Errorf("algorithm %q is not accepted: want RS256, RS384, RS512, ES256 or ES384", alg)
	}
	digest := hashOf(h, signed)
	switch k := key.(type) {
	case *rsa.PublicKey:
		if !strings.HasPrefix(alg, "RS") || rsa.VerifyPKCS1v15(k, h, digest, sig) != nil {
			return errors.New("bad signature")
		}
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if want := map[string]int{"ES256": 32, "ES384": 48}[alg]; want != size || len(sig) != 2*size ||
			!ecdsa.Verify(k, digest, new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])) {
			return errors.New("bad signature")
		}
	default:
		return errors.New("unusable key")
	}
	return nil
}

func hashOf(h crypto.Hash, b []byte) []byte {
	switch h {
	case crypto.SHA384:
		s := sha512.Sum384(b)
		return s[:]
	case crypto.SHA512:
		s := sha512.Sum512(b)
		return s[:]
	}
	s := sha256.Sum256(b)
	return s[:]
}
