package actors

import (
	"sync/atomic"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// TokenTable is the broker's table of users' credentials (tokens and
// SCRAM passwords), refreshed from every metadata snapshot and read by the
// listeners for each login.
type TokenTable struct {
	users atomic.Pointer[credentials]
}

type credentials struct {
	tokens map[string]string // token SHA-256 -> user name
	scram  map[acl.ScramKey]*messages.ScramCredential
}

// Set replaces the table with the users of rec.
func (t *TokenTable) Set(rec *messages.SecurityRecord) {
	t.users.Store(&credentials{tokens: acl.TokenUsers(rec), scram: acl.ScramCredentials(rec)})
}

// Authenticate returns the principal of token, if a user has it.
func (t *TokenTable) Authenticate(token string) (string, bool) {
	c := t.users.Load()
	if c == nil {
		return "", false
	}
	name, ok := c.tokens[acl.HashToken(token)]
	if !ok {
		return "", false
	}
	return "User:" + name, true
}

// Scram returns user's password of a SCRAM mechanism, if it has one.
func (t *TokenTable) Scram(user string, mechanism int32) (*messages.ScramCredential, bool) {
	c := t.users.Load()
	if c == nil {
		return nil, false
	}
	cred, ok := c.scram[acl.ScramKey{User: user, Mechanism: mechanism}]
	return cred, ok
}
