package acl

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
)

func credential(t *testing.T, mech int32, password string, iterations int32) *messages.ScramCredential {
	t.Helper()
	salt, err := NewScramSalt()
	if err != nil {
		t.Fatal(err)
	}
	salted, err := SaltPassword(mech, password, salt, int(iterations))
	if err != nil {
		t.Fatal(err)
	}
	return ScramCredentialOf(mech, iterations, salt, salted)
}

// SaltPassword is PBKDF2-HMAC with the mechanism's hash (RFC 7914's
// PBKDF2-HMAC-SHA-256 test vector, one iteration).
func TestSaltPassword(t *testing.T) {
	got, err := SaltPassword(ScramSHA256, "passwd", []byte("salt"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"; hex.EncodeToString(got) != want {
		t.Errorf("got %x", got)
	}
	if _, err := SaltPassword(3, "x", []byte("s"), 4096); err == nil {
		t.Error("an unknown mechanism salted a password")
	}
	if c := credential(t, ScramSHA512, "p", 4096); len(c.StoredKey) != 64 || len(c.ServerKey) != 64 {
		t.Errorf("SHA-512 keys of %d and %d bytes", len(c.StoredKey), len(c.ServerKey))
	}
}

// AlterScram answers one result per user in the order named, applies a
// user's changes only when all of them are accepted, creates users with
// a password and removes those left with no credential.
func TestAlterScram(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	rec, err := AddUser(nil, "tok", HashToken("sluice_t"), now)
	if err != nil {
		t.Fatal(err)
	}
	sha256 := credential(t, ScramSHA256, "one", 4096)
	sha512 := credential(t, ScramSHA512, "two", 8192)
	rec, results := AlterScram(rec, []*messages.ScramUpsertion{
		{Name: "bob", Credential: sha256},
		{Name: "tok", Credential: sha512},
		{Name: "bob", Credential: sha512},
	}, nil, now)
	wantCodes(t, results, "bob", messages.ErrorCode_NONE, "tok", messages.ErrorCode_NONE)
	if len(rec.Users) != 2 || rec.Users[0].Name != "bob" || len(rec.Users[0].Scram) != 2 ||
		rec.Users[0].Scram[0].Mechanism != ScramSHA256 || rec.Users[0].TokenSha256 != "" || rec.Users[0].CreatedUnixMs != now.UnixMilli() {
		t.Fatalf("after setting passwords: %v", rec.Users)
	}
	if got := ScramCredentials(rec)[ScramKey{"tok", ScramSHA512}]; got == nil || got.Iterations != 8192 {
		t.Errorf("tok's SHA-512 password: %v", got)
	}
	if tu := TokenUsers(rec); len(tu) != 1 {
		t.Errorf("a user without a token has one: %v", tu)
	}

	// Refusals: each user's own; a refused change leaves the user as it was.
	badIter := credential(t, ScramSHA256, "x", 4096)
	badIter.Iterations = 100
	unknown := credential(t, ScramSHA256, "x", 4096)
	unknown.Mechanism = 7
	empty := ScramCredentialOf(ScramSHA256, 4096, []byte("s"), nil)
	next, results := AlterScram(rec, []*messages.ScramUpsertion{
		{Name: "c1", Credential: badIter},
		{Name: "c2", Credential: unknown},
		{Name: "c3", Credential: empty},
		{Name: "bad name", Credential: sha256},
		{Name: "bob", Credential: sha256},
	}, []*messages.ScramDeletion{
		{Name: "bob", Mechanism: ScramSHA256}, // twice in one request
		{Name: "tok", Mechanism: ScramSHA256}, // has none
		{Name: "ghost", Mechanism: ScramSHA512},
		{Name: "tok", Mechanism: 9},
	}, now)
	wantCodes(t, results,
		"c1", messages.ErrorCode_UNACCEPTABLE_CREDENTIAL, "c2", messages.ErrorCode_UNSUPPORTED_SASL_MECHANISM,
		"c3", messages.ErrorCode_UNACCEPTABLE_CREDENTIAL, "bad name", messages.ErrorCode_UNACCEPTABLE_CREDENTIAL,
		"bob", messages.ErrorCode_DUPLICATE_RESOURCE, "tok", messages.ErrorCode_RESOURCE_NOT_FOUND,
		"ghost", messages.ErrorCode_RESOURCE_NOT_FOUND)
	if len(next.Users) != 2 || len(next.Users[0].Scram) != 2 || len(next.Users[1].Scram) != 1 {
		t.Errorf("refused changes changed users: %v", next.Users)
	}

	// Removing bob's passwords removes bob; tok keeps its token.
	next, results = AlterScram(rec, nil, []*messages.ScramDeletion{
		{Name: "bob", Mechanism: ScramSHA256}, {Name: "bob", Mechanism: ScramSHA512}, {Name: "tok", Mechanism: ScramSHA512},
	}, now)
	wantCodes(t, results, "bob", messages.ErrorCode_NONE, "tok", messages.ErrorCode_NONE)
	if len(next.Users) != 1 || next.Users[0].Name != "tok" || next.Users[0].TokenSha256 == "" || len(next.Users[0].Scram) != 0 {
		t.Errorf("after removing passwords: %v", next.Users)
	}
	if len(rec.Users) != 2 || len(rec.Users[0].Scram) != 2 {
		t.Error("AlterScram changed the record it was given")
	}

	// A user with passwords only can be given a token.
	withToken, err := AddUser(rec, "bob", HashToken("sluice_b"), now)
	if err != nil || withToken.Users[0].TokenSha256 == "" || len(withToken.Users[0].Scram) != 2 || rec.Users[0].TokenSha256 != "" {
		t.Errorf("a token for a user with passwords: %v %v", withToken.GetUsers(), err)
	}
	if _, err := AddUser(withToken, "bob", HashToken("sluice_c"), now); err == nil {
		t.Error("a second token for one user")
	}
}

func wantCodes(t *testing.T, results []*messages.UserResult, pairs ...any) {
	t.Helper()
	if len(results) != len(pairs)/2 {
		t.Fatalf("%d results, want %d: %v", len(results), len(pairs)/2, results)
	}
	for i, r := range results {
		if r.Name != pairs[2*i].(string) || r.Error != pairs[2*i+1].(messages.ErrorCode) {
			t.Errorf("result %d: %s %v (%s), want %s %v", i, r.Name, r.Error, r.ErrorMessage, pairs[2*i], pairs[2*i+1])
		}
		if r.Error != messages.ErrorCode_NONE && r.ErrorMessage == "" {
			t.Errorf("result %d: %v without a reason", i, r.Error)
		}
	}
}
