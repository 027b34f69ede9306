package console

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"

	"github.com/sluicemq/sluice/messages"
)

// Who may see and do what. On a broker with TLS every request comes from
// a principal (its client certificate's), and the broker's ACLs apply to
// it as they do to the same principal's clients: a page lists only the
// topics and groups it may describe, the message browser needs Read on the
// topic, and each action what the Kafka request behind it needs. The
// console itself reads the cluster with the broker's own rights, so these
// checks are its only fence.

// Authorize says why principal may not perform op on a resource ("" when
// it may).
type Authorize func(principal string, op messages.AclOperation, rt messages.AclResourceType, name string) string

// Operations and resource types, shortened.
const (
	opRead     = messages.AclOperation_ACL_OPERATION_READ
	opCreate   = messages.AclOperation_ACL_OPERATION_CREATE
	opDelete   = messages.AclOperation_ACL_OPERATION_DELETE
	opDescribe = messages.AclOperation_ACL_OPERATION_DESCRIBE
	onTopic    = messages.AclResourceType_ACL_RESOURCE_TOPIC
	onGroup    = messages.AclResourceType_ACL_RESOURCE_GROUP
	onCluster  = messages.AclResourceType_ACL_RESOURCE_CLUSTER
)

// visitor is who a request comes from.
type visitor struct {
	principal string // "" without TLS
	// session is the visitor's console session, a random value in a
	// cookie of this console's: its form tokens are good only with it.
	session   string
	authorize Authorize
	// errPage answers a refusal.
	errPage *template.Template
}

// visitor returns the request's visitor, or answers 401 and returns false.
func (c *Console) visitor(w http.ResponseWriter, r *http.Request) (visitor, bool) {
	if c.cfg.Visitor == nil {
		return visitor{session: session(w, r), errPage: c.pages["error"]}, true
	}
	p, err := c.cfg.Visitor(r)
	if err != nil {
		c.failText(w, err.Error(), http.StatusUnauthorized)
		return visitor{}, false
	}
	return visitor{principal: p, session: session(w, r), authorize: c.cfg.Authorize, errPage: c.pages["error"]}, true
}

// sessionCookie names the cookie that holds a visitor's console session.
const sessionCookie = "sluice_console"

// session returns the request's console session, or starts one: a new
// random value set as a cookie only this console's pages send back
// (SameSite=Strict, not readable by scripts).
func session(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(sessionCookie); err == nil && len(ck.Value) == 32 {
		return ck.Value
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	v := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return v
}

// why says why the visitor may not perform op on a resource ("" when it
// may). Without an authorizer everything is allowed.
func (v visitor) why(op messages.AclOperation, rt messages.AclResourceType, name string) string {
	if v.authorize == nil {
		return ""
	}
	return v.authorize(v.principal, op, rt, name)
}

func (v visitor) may(op messages.AclOperation, rt messages.AclResourceType, name string) bool {
	return v.why(op, rt, name) == ""
}

// permit answers 403 with the reason and returns false unless the visitor
// may perform op on the resource.
func (v visitor) permit(w http.ResponseWriter, op messages.AclOperation, rt messages.AclResourceType, name string) bool {
	if why := v.why(op, rt, name); why != "" {
		failPage(w, v.errPage, http.StatusForbidden, fmt.Sprintf("not allowed: %s", why))
		return false
	}
	return true
}
