package actors

import (
	"sync/atomic"

	"github.com/sluicemq/sluice/acl"
)

// TokenTable is the broker's table of token users, refreshed from every
// metadata snapshot and read by the transport for each new connection
// that authenticates with a token.
type TokenTable struct {
	users atomic.Pointer[map[string]string] // token SHA-256 -> user name
}

// Set replaces the table.
func (t *TokenTable) Set(users map[string]string) { t.users.Store(&users) }

// Authenticate returns the principal of token, if a user has it.
func (t *TokenTable) Authenticate(token string) (string, bool) {
	m := t.users.Load()
	if m == nil {
		return "", false
	}
	name, ok := (*m)[acl.HashToken(token)]
	if !ok {
		return "", false
	}
	return "User:" + name, true
}
