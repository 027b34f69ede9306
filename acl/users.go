package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicemq/sluice/messages"
)

var (
	// ErrUserExists: AddUser of a name that already has a user.
	ErrUserExists = errors.New("user already exists")
	// ErrUserNotFound: DeleteUser of a name that has no user.
	ErrUserNotFound = errors.New("user not found")
)

// maxUserNameLen bounds a user name (and so the principal User:<name>).
const maxUserNameLen = 128

// ValidUserName checks a token user's name: 1..128 characters of
// [A-Za-z0-9._@-], not "*" (which would read as every user).
func ValidUserName(name string) error {
	switch {
	case name == "":
		return errors.New("user name is empty")
	case name == wildcardName:
		return errors.New(`user name "*" is reserved: User:* means every user`)
	case len(name) > maxUserNameLen:
		return fmt.Errorf("user name is %d characters long; the limit is %d", len(name), maxUserNameLen)
	}
	for _, c := range name {
		if !userNameChar(c) {
			return fmt.Errorf("user name %q contains %q; use only letters, digits and . _ @ -", name, c)
		}
	}
	return nil
}

func userNameChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '@' || c == '-'
}

// AddUser returns rec with a new token user name whose token hashes to
// tokenSHA256 (64 lowercase hex), created at now; a user with passwords
// only gets the token. A user with a token already gives ErrUserExists; a
// hash another user already has is refused too, since a token must name
// exactly one user.
func AddUser(rec *messages.SecurityRecord, name, tokenSHA256 string, now time.Time) (*messages.SecurityRecord, error) {
	if err := ValidUserName(name); err != nil {
		return nil, err
	}
	if err := validTokenHash(tokenSHA256); err != nil {
		return nil, err
	}
	existing := -1
	for i, u := range rec.GetUsers() {
		if u.GetName() == name && u.GetTokenSha256() != "" {
			return nil, fmt.Errorf("%w: %q", ErrUserExists, name)
		}
		if u.GetName() == name {
			existing = i
		}
		if u.GetTokenSha256() == tokenSHA256 {
			return nil, errors.New("another user already has this token; make a new token")
		}
	}
	next := cloneRecord(rec)
	if existing >= 0 {
		u := cloneUser(next.Users[existing])
		u.TokenSha256 = tokenSHA256
		next.Users[existing] = u
		return next, nil
	}
	i, _ := slices.BinarySearchFunc(next.Users, name, func(u *messages.UserRecord, n string) int { return strings.Compare(u.Name, n) })
	next.Users = slices.Insert(next.Users, i, &messages.UserRecord{
		Name: name, TokenSha256: tokenSHA256, CreatedUnixMs: now.UnixMilli(),
	})
	return next, nil
}

// DeleteUser returns rec without the user name (its token and passwords),
// or ErrUserNotFound. The
// user's ACLs stay, as in Kafka: they are bindings of a principal, not of
// an account.
func DeleteUser(rec *messages.SecurityRecord, name string) (*messages.SecurityRecord, error) {
	next := cloneRecord(rec)
	i := slices.IndexFunc(next.Users, func(u *messages.UserRecord) bool { return u.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrUserNotFound, name)
	}
	next.Users = slices.Delete(next.Users, i, i+1)
	return next, nil
}

// TokenUsers maps token hash -> user name, for the authentication lookup.
func TokenUsers(rec *messages.SecurityRecord) map[string]string {
	out := make(map[string]string, len(rec.GetUsers()))
	for _, u := range rec.GetUsers() {
		if u.GetTokenSha256() != "" {
			out[u.GetTokenSha256()] = u.GetName()
		}
	}
	return out
}
