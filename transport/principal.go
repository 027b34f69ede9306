package transport

import (
	"crypto/x509"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
)

// PrincipalHeader is the message header the guard puts on every envelope
// that arrives from the network: the principal the connection authenticated
// as ("Broker:1", "User:alice", or AnonymousPrincipal without TLS). Like
// PeerHeader it overwrites whatever the sender wrote.
const PrincipalHeader = "sluice-principal"

// AnonymousPrincipal is the principal of every connection to a node
// without TLS (Kafka's name for it).
const AnonymousPrincipal = "User:ANONYMOUS"

// BrokerPrincipalPrefix starts the principal of every broker.
const BrokerPrincipalPrefix = "Broker:"

// Principal returns who sent the current message of ctx: the principal the
// guard stamped for a message from another process, or "" for a message
// sent inside this process (the broker itself, or an actor a user runs in
// it).
func Principal(ctx actor.Context) string { return ctx.MessageHeader().Get(PrincipalHeader) }

// BrokerPrincipal is the principal of broker id.
func BrokerPrincipal(id int32) string { return BrokerPrincipalPrefix + strconv.Itoa(int(id)) }

// IsBrokerPrincipal reports whether p names a broker.
func IsBrokerPrincipal(p string) bool { return strings.HasPrefix(p, BrokerPrincipalPrefix) }

// URI SANs that name a principal: sluice://broker/<id> and sluice://user/<name>.
// A certificate without one is User:<common name>.
const (
	sanScheme    = "sluice"
	sanBroker    = "broker"
	sanUser      = "user"
	sanEphemeral = "ephemeral"
)

// CertPrincipal maps a verified certificate to its principal: Broker:<id>
// for a URI SAN sluice://broker/<id>, User:<name> for sluice://user/<name>,
// else User:<common name>. "" when it names none.
func CertPrincipal(c *x509.Certificate) string {
	for _, u := range c.URIs {
		// Only the plain form: no escapes, query, fragment or user, so
		// that one principal has one spelling.
		if u.Scheme != sanScheme || u.RawPath != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" || u.ForceQuery {
			continue
		}
		name := strings.TrimPrefix(u.Path, "/")
		switch u.Host {
		case sanBroker:
			if isDecimal(name) {
				if id, err := strconv.ParseInt(name, 10, 32); err == nil {
					return BrokerPrincipal(int32(id))
				}
			}
		case sanUser:
			if name != "" {
				return "User:" + name
			}
		}
	}
	if c.Subject.CommonName != "" {
		return "User:" + c.Subject.CommonName
	}
	return ""
}

// ephemeralURI marks the self-signed certificate a client without one of
// its own presents: it proves nothing but lets a broker pin the client's
// reply listener to the connection that authenticated with a token.
var ephemeralURI = &url.URL{Scheme: sanScheme, Host: sanEphemeral}

func isEphemeral(c *x509.Certificate) bool {
	if c.Issuer.String() != c.Subject.String() {
		return false
	}
	for _, u := range c.URIs {
		if u.Scheme == sanScheme && u.Host == sanEphemeral {
			return true
		}
	}
	return false
}

// isDecimal reports whether s is a non-empty string of ASCII digits.
func isDecimal(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// CheckedPrincipal is the principal whose ACLs a request from p is checked
// against: "" (everything allowed) on a broker without TLS, and for
// brokers and super users.
func CheckedPrincipal(p string, secure bool, superUsers []string) string {
	if !secure || p == "" || IsBrokerPrincipal(p) || slices.Contains(superUsers, p) {
		return ""
	}
	return p
}
