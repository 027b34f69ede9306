package consul

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// lockDelay is the controller session's lock-delay: how long Consul keeps
// the key from being locked again after the session dies. Consul's default
// of 15s would delay every failover by that much; fencing (every write
// checks the session) already keeps a deposed controller from writing.
// Consul 1.14 takes "0s" as none and sub-microsecond values as seconds
// ("1ns" becomes 1s); consul/api cannot send 0 (it omits it, so the 15s
// default applies), hence an explicit 1ms.
const lockDelay = time.Millisecond

// session is a Consul session tied to this broker's health check, renewed
// until closed or gone.
type session struct {
	id     string
	ctx    context.Context // ends when the session is closed or gone
	cancel context.CancelFunc
	done   chan struct{} // closed when the renewer has returned
}

// newSession creates a session (for purpose: "broker" for the id's
// claim, "controller" for the controller lock) whose only health check is this broker's
// TTL check. Not the node's serfHealth: brokers can share an agent (node),
// which would outlive a dead broker. consul/api cannot send the empty
// NodeChecks that drop serfHealth, so the body is written by hand.
func (c *Backend) newSession(ctx context.Context, m *membership, purpose string) (*session, error) {
	body := map[string]any{
		"Name":          fmt.Sprintf("%s-%s-%d", c.serviceName(), purpose, m.broker.ID),
		"Behavior":      api.SessionBehaviorRelease,
		"TTL":           c.cfg.SessionTTL.String(),
		"LockDelay":     lockDelay.String(),
		"NodeChecks":    []string{},
		"ServiceChecks": []api.ServiceCheck{{ID: m.check}},
	}
	var out struct{ ID string }
	cctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.client.Raw().Write("/v1/session/create", body, &out, (&api.WriteOptions{}).WithContext(cctx)); err != nil {
		return nil, c.failed(ctx, fmt.Errorf("consul: create session: %w", err))
	}
	sctx, scancel := context.WithCancel(c.closeCtx)
	s := &session{id: out.ID, ctx: sctx, cancel: scancel, done: make(chan struct{})}
	go c.renew(s)
	return s, nil
}

// renew renews s every SessionTTL/2, a backstop behind the health check:
// it ends s when Consul no longer has it or cannot be reached for SessionTTL.
func (c *Backend) renew(s *session) {
	defer close(s.done)
	every := c.cfg.SessionTTL / 2
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := c.bounded(s.ctx, every)
		entry, _, err := c.client.Session().Renew(s.id, (&api.WriteOptions{}).WithContext(cctx))
		cancel()
		switch {
		case s.ctx.Err() != nil:
			return
		case err == nil && entry == nil:
			c.log.Debug("controller session is gone", "session", s.id)
			s.cancel()
			return
		case err == nil:
			last = time.Now()
		case time.Since(last) > c.cfg.SessionTTL:
			c.log.Debug("cannot renew controller session", "session", s.id, "error", err)
			s.cancel()
			return
		}
	}
}

// closeSession stops renewing s and destroys it, which releases the lock if
// s held it.
func (c *Backend) closeSession(ctx context.Context, s *session) error {
	s.cancel()
	<-s.done
	cctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.client.Session().Destroy(s.id, (&api.WriteOptions{}).WithContext(cctx)); err != nil {
		return c.failed(ctx, fmt.Errorf("consul: destroy session %s: %w", s.id, err))
	}
	return nil
}
