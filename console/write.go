package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sluicemq/sluice/client"
)

// Mutating actions (create or delete a topic, reset a group's offsets) are
// served only with Config.Write. Each form carries a token derived from a
// secret of this process, and a request must come from the console's own
// origin: a page of another site cannot make the visitor's browser act.

// csrf makes and checks the forms' tokens.
type csrf struct{ secret []byte }

func newCSRF() csrf {
	s := make([]byte, 32)
	_, _ = rand.Read(s)
	return csrf{secret: s}
}

// token is the value every form this console shows visitor v carries: of
// its principal and its session, so one visitor's token is no use to
// another, with or without TLS.
func (c csrf) token(v visitor) string {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte("sluice console form\x00" + v.principal + "\x00" + v.session))
	return hex.EncodeToString(m.Sum(nil))
}

func (c csrf) valid(t string, v visitor) bool {
	return hmac.Equal([]byte(t), []byte(c.token(v)))
}

// sameOrigin reports whether r comes from a page of this console: its
// Origin (or, without one, its Referer) names the host it was sent to, and
// the browser does not call it cross-site.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return false
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	u, err := url.Parse(from)
	return err == nil && from != "" && u.Host == r.Host
}

// mutating wraps an action: refused unless writes are on, the request is
// same-origin and carries the visitor's token. The action checks the
// visitor's ACLs itself.
func (c *Console) mutating(action func(w http.ResponseWriter, r *http.Request, v visitor)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := c.visitor(w, r)
		switch {
		case !ok:
		case !c.cfg.Write:
			c.failText(w, "the console is read-only: start the broker with --console-write to allow changes", http.StatusForbidden)
		case !sameOrigin(r):
			c.failText(w, "refused: the request does not come from this console's pages", http.StatusForbidden)
		case r.ParseForm() != nil || !c.csrf.valid(r.PostForm.Get("csrf"), v):
			c.failText(w, "refused: missing or wrong form token (reload the page)", http.StatusForbidden)
		default:
			action(w, r, v)
		}
	}
}

// createTopic needs Create on the cluster or on the topic, as Kafka's
// CreateTopics does.
func (c *Console) createTopic(w http.ResponseWriter, r *http.Request, v visitor) {
	name := r.PostForm.Get("name")
	partitions, err1 := strconv.Atoi(r.PostForm.Get("partitions"))
	rf, err2 := strconv.Atoi(r.PostForm.Get("replication_factor"))
	if name == "" || err1 != nil || err2 != nil {
		c.failText(w, "want a name, partitions and a replication factor", http.StatusBadRequest)
		return
	}
	if !v.may(opCreate, onCluster, "") && !v.permit(w, opCreate, onTopic, name) {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	if err := c.cfg.Admin.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: int32(partitions), ReplicationFactor: int32(rf)}); err != nil {
		c.failText(w, fmt.Sprintf("create topic %q: %v", name, err), http.StatusBadRequest)
		return
	}
	c.logChange(r, v, "created topic", "topic", name)
	http.Redirect(w, r, "/topics/"+url.PathEscape(name), http.StatusSeeOther)
}

// deleteTopic needs Delete on the topic.
func (c *Console) deleteTopic(w http.ResponseWriter, r *http.Request, v visitor) {
	name := r.PathValue("name")
	if !v.permit(w, opDelete, onTopic, name) {
		return
	}
	if r.PostForm.Get("confirm") != name {
		c.failText(w, "type the topic's name to confirm", http.StatusBadRequest)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	if err := c.cfg.Admin.DeleteTopic(ctx, name); err != nil {
		c.failText(w, fmt.Sprintf("delete topic %q: %v", name, err), http.StatusBadRequest)
		return
	}
	c.logChange(r, v, "deleted topic", "topic", name)
	http.Redirect(w, r, "/topics", http.StatusSeeOther)
}

// resetOffsets commits offsets for the group: Read on the group and on
// the topic, as Kafka's OffsetCommit needs.
func (c *Console) resetOffsets(w http.ResponseWriter, r *http.Request, v visitor) {
	group, topic := r.PathValue("name"), r.PostForm.Get("topic")
	if !v.permit(w, opRead, onGroup, group) || !v.permit(w, opRead, onTopic, topic) {
		return
	}
	var to client.Offset
	switch r.PostForm.Get("to") {
	case "earliest":
		to = client.AtStart()
	case "latest":
		to = client.AtEnd()
	default:
		c.failText(w, "to: want earliest or latest", http.StatusBadRequest)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	if _, err := c.cfg.Admin.ResetOffsets(ctx, group, topic, to); err != nil {
		c.failText(w, fmt.Sprintf("reset %q on %q: %v", group, topic, err), http.StatusBadRequest)
		return
	}
	c.logChange(r, v, "reset group offsets", "group", group, "topic", topic, "to", r.PostForm.Get("to"))
	http.Redirect(w, r, "/groups/"+url.PathEscape(group), http.StatusSeeOther)
}

func (c *Console) logChange(r *http.Request, v visitor, what string, args ...any) {
	if c.cfg.Logger != nil {
		c.cfg.Logger.Info("console: "+what, append(args, "remote", r.RemoteAddr, "principal", v.principal)...)
	}
}
