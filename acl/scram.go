package acl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"github.com/sluicemq/sluice/messages"
)

// Passwords are SCRAM credentials (RFC 5802, RFC 7677), as Kafka keeps
// them: the client salts the password (PBKDF2 with the mechanism's hash)
// and only keys derived from the salted password are stored, so the
// security record never holds anything a client could log in with.

// SCRAM mechanisms, numbered as Kafka numbers them on the wire.
const (
	ScramSHA256 int32 = 1
	ScramSHA512 int32 = 2
)

// The iteration bounds Kafka accepts for a SCRAM credential.
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
	// maxSaltLen bounds a salt, which the security record keeps per user.
	maxSaltLen = 1024
)

// ScramMechanismName is the SASL name of m ("" for an unknown one).
func ScramMechanismName(m int32) string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// ScramMechanismOf is the mechanism of a SASL name.
func ScramMechanismOf(name string) (int32, bool) {
	for _, m := range []int32{ScramSHA256, ScramSHA512} {
		if strings.EqualFold(name, ScramMechanismName(m)) {
			return m, true
		}
	}
	return 0, false
}

// ScramHash is m's hash function (nil for an unknown mechanism).
func ScramHash(m int32) func() hash.Hash {
	switch m {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// SaltPassword is SCRAM's Hi(password, salt, iterations): what a client
// computes from a password and what AlterUserScramCredentials carries.
func SaltPassword(m int32, password string, salt []byte, iterations int) ([]byte, error) {
	h := ScramHash(m)
	if h == nil {
		return nil, fmt.Errorf("unknown SCRAM mechanism %d", m)
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// NewScramSalt returns a fresh random salt.
func NewScramSalt() ([]byte, error) {
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("reading random bytes for a salt: %w", err)
	}
	return salt, nil
}

// ScramCredentialOf derives the stored credential from a salted password:
// StoredKey = H(HMAC(salted, "Client Key")), ServerKey = HMAC(salted,
// "Server Key"). An unknown mechanism gives a credential without keys,
// which AlterScram refuses with the reason.
func ScramCredentialOf(m int32, iterations int32, salt, saltedPassword []byte) *messages.ScramCredential {
	cred := &messages.ScramCredential{Mechanism: m, Iterations: iterations, Salt: salt}
	h := ScramHash(m)
	if h == nil || len(saltedPassword) == 0 {
		return cred
	}
	clientKey := ScramHMAC(h, saltedPassword, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	cred.StoredKey = stored.Sum(nil)
	cred.ServerKey = ScramHMAC(h, saltedPassword, []byte("Server Key"))
	return cred
}

// ScramHMAC is HMAC(key, msg) with h.
func ScramHMAC(h func() hash.Hash, key, msg []byte) []byte {
	mac := hmac.New(h, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// checkScramCredential says why cred cannot be kept, with the error code
// Kafka answers for it.
func checkScramCredential(cred *messages.ScramCredential) (messages.ErrorCode, string) {
	h := ScramHash(cred.GetMechanism())
	switch {
	case h == nil:
		return messages.ErrorCode_UNSUPPORTED_SASL_MECHANISM,
			fmt.Sprintf("unknown SCRAM mechanism %d: want 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512)", cred.GetMechanism())
	case cred.Iterations < MinScramIterations || cred.Iterations > MaxScramIterations:
		return messages.ErrorCode_UNACCEPTABLE_CREDENTIAL,
			fmt.Sprintf("%d iterations: want %d to %d", cred.Iterations, MinScramIterations, MaxScramIterations)
	case len(cred.Salt) == 0 || len(cred.Salt) > maxSaltLen:
		return messages.ErrorCode_UNACCEPTABLE_CREDENTIAL, fmt.Sprintf("the salt has %d bytes: want 1 to %d", len(cred.Salt), maxSaltLen)
	case len(cred.StoredKey) != h().Size() || len(cred.ServerKey) != h().Size():
		return messages.ErrorCode_UNACCEPTABLE_CREDENTIAL, "the salted password is empty"
	}
	return messages.ErrorCode_NONE, ""
}

// AlterScram sets (upserts) and removes (deletes) users' passwords, as
// Kafka's AlterUserScramCredentials: one result per user named, in the
// order first named; a user any of whose changes is refused keeps its
// credentials as they were. Setting a password of a user that does not
// exist creates it (created at now); removing the last password of a user
// without a token removes the user.
func AlterScram(rec *messages.SecurityRecord, upserts []*messages.ScramUpsertion, deletes []*messages.ScramDeletion, now time.Time) (*messages.SecurityRecord, []*messages.UserResult) {
	var order []string
	changes := map[string][]scramChange{}
	add := func(name string, c scramChange) {
		if _, ok := changes[name]; !ok {
			order = append(order, name)
		}
		changes[name] = append(changes[name], c)
	}
	for _, u := range upserts {
		add(u.GetName(), scramChange{set: u.GetCredential(), mech: u.GetCredential().GetMechanism()})
	}
	for _, d := range deletes {
		add(d.GetName(), scramChange{mech: d.GetMechanism()})
	}
	next := cloneRecord(rec)
	results := make([]*messages.UserResult, 0, len(order))
	for _, name := range order {
		code, text := alterUserScram(next, name, changes[name], now)
		results = append(results, &messages.UserResult{Name: name, Error: code, ErrorMessage: text})
	}
	return next, results
}

// scramChange sets one password (set) or removes one (set nil).
type scramChange struct {
	set  *messages.ScramCredential
	mech int32
}

// alterUserScram applies one user's changes to next (in place), or none
// of them when one is refused.
func alterUserScram(next *messages.SecurityRecord, name string, changes []scramChange, now time.Time) (messages.ErrorCode, string) {
	if err := ValidUserName(name); err != nil {
		return messages.ErrorCode_UNACCEPTABLE_CREDENTIAL, err.Error()
	}
	i := slices.IndexFunc(next.Users, func(u *messages.UserRecord) bool { return u.Name == name })
	var user *messages.UserRecord
	if i >= 0 {
		user = cloneUser(next.Users[i])
	} else {
		user = &messages.UserRecord{Name: name, CreatedUnixMs: now.UnixMilli()}
	}
	seen := map[int32]bool{}
	for _, c := range changes {
		set, mech := c.set, c.mech
		if seen[mech] {
			return messages.ErrorCode_DUPLICATE_RESOURCE, fmt.Sprintf("the %s password of %q is changed twice in one request", mechName(mech), name)
		}
		seen[mech] = true
		at := slices.IndexFunc(user.Scram, func(s *messages.ScramCredential) bool { return s.Mechanism == mech })
		if set != nil {
			if code, why := checkScramCredential(set); code != messages.ErrorCode_NONE {
				return code, why
			}
			kept := &messages.ScramCredential{Mechanism: mech, Iterations: set.Iterations,
				Salt: slices.Clone(set.Salt), StoredKey: slices.Clone(set.StoredKey), ServerKey: slices.Clone(set.ServerKey)}
			if at >= 0 {
				user.Scram[at] = kept
			} else {
				user.Scram = append(user.Scram, kept)
			}
			continue
		}
		if ScramHash(mech) == nil {
			return messages.ErrorCode_UNSUPPORTED_SASL_MECHANISM, fmt.Sprintf("unknown SCRAM mechanism %d", mech)
		}
		if at < 0 {
			return messages.ErrorCode_RESOURCE_NOT_FOUND, fmt.Sprintf("user %q has no %s password", name, mechName(mech))
		}
		user.Scram = slices.Delete(user.Scram, at, at+1)
	}
	slices.SortFunc(user.Scram, func(a, b *messages.ScramCredential) int { return int(a.Mechanism - b.Mechanism) })
	switch {
	case i >= 0 && len(user.Scram) == 0 && user.TokenSha256 == "":
		next.Users = slices.Delete(next.Users, i, i+1)
	case i >= 0:
		next.Users[i] = user
	default:
		at, _ := slices.BinarySearchFunc(next.Users, name, func(u *messages.UserRecord, n string) int { return strings.Compare(u.Name, n) })
		next.Users = slices.Insert(next.Users, at, user)
	}
	return messages.ErrorCode_NONE, ""
}

func mechName(m int32) string {
	if n := ScramMechanismName(m); n != "" {
		return n
	}
	return fmt.Sprintf("mechanism %d", m)
}

func cloneUser(u *messages.UserRecord) *messages.UserRecord {
	c := &messages.UserRecord{Name: u.Name, TokenSha256: u.TokenSha256, CreatedUnixMs: u.CreatedUnixMs}
	c.Scram = append([]*messages.ScramCredential(nil), u.Scram...)
	return c
}

// ScramKey names one password: a user and a mechanism.
type ScramKey struct {
	User      string
	Mechanism int32
}

// ScramCredentials maps every password of rec by user and mechanism, for
// the login lookup.
func ScramCredentials(rec *messages.SecurityRecord) map[ScramKey]*messages.ScramCredential {
	out := map[ScramKey]*messages.ScramCredential{}
	for _, u := range rec.GetUsers() {
		for _, c := range u.GetScram() {
			out[ScramKey{u.GetName(), c.GetMechanism()}] = c
		}
	}
	return out
}
