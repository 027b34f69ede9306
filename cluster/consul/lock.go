package consul

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/sluicemq/sluice/cluster"
)

// lease is one term as controller.
type lease struct {
	s      *session
	epoch  int64
	lost   chan struct{}
	once   sync.Once
	ctx    context.Context // ends when the term ends
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// end closes Lost (once) and stops the lease's goroutines.
func (l *lease) end() bool {
	first := false
	l.once.Do(func() {
		first = true
		close(l.lost)
		l.cancel()
	})
	return first
}

// Campaign implements ControllerLock. The session dies with this broker's
// TTL check, so a killed controller loses the lock about CheckTTL after its
// last heartbeat. Each Campaign starts a new session (and term); a term
// still held from an earlier Campaign is resigned first.
func (c *Backend) Campaign(ctx context.Context, brokerID int32) (*cluster.Leadership, error) {
	c.mu.Lock()
	m, old := c.member, c.lease
	c.lease = nil
	c.mu.Unlock()
	if c.isClosed() {
		return nil, cluster.ErrClosed
	}
	if m == nil {
		return nil, errors.New("cluster: Campaign before Register: the controller session is tied to the broker's health check")
	}
	if m.broker.ID != brokerID {
		return nil, fmt.Errorf("cluster: Campaign(%d) but this backend registered broker %d", brokerID, m.broker.ID)
	}
	var stale string
	if old != nil {
		stale = old.s.id
		_ = c.endLease(ctx, old)
	}
	pause := 100 * time.Millisecond
	for {
		s, err := c.newSession(ctx, m, "controller")
		if err == nil {
			var lead *cluster.Leadership
			if lead, err = c.acquire(ctx, s, brokerID, stale); err == nil {
				return lead, nil
			}
			// Even when ctx ended: a session left behind would live on
			// until its TTL ran out.
			_ = c.closeSession(context.WithoutCancel(ctx), s)
		}
		if ctx.Err() != nil || c.isClosed() {
			return nil, c.failed(ctx, ctx.Err())
		}
		// E.g. the check is not passing yet after an agent restart.
		c.log.Debug("controller campaign: retrying", "broker", brokerID, "error", err)
		if !sleep(ctx, pause) {
			return nil, c.failed(ctx, ctx.Err())
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// acquire waits until the controller key is free, then locks it for s and
// bumps controller_epoch in the same transaction: every controller's epoch
// is larger than every earlier one's. A key held by stale (this broker's
// previous session) is freed at once.
func (c *Backend) acquire(ctx context.Context, s *session, id int32, stale string) (*cluster.Leadership, error) {
	// Give up when the session dies; Campaign then makes a new one.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	var waitIndex uint64
	for failures := 0; ; {
		cctx, ccancel := c.blocking(ctx, watchWait)
		kv, meta, err := c.client.KV().Get(c.key(keyController), (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: watchWait}).WithContext(cctx))
		ccancel()
		if err != nil {
			return nil, fmt.Errorf("consul: read controller key: %w", err)
		}
		if meta.LastIndex < waitIndex {
			waitIndex = 0 // Consul's index went backwards: start over
			continue
		}
		waitIndex = meta.LastIndex
		if kv != nil && kv.Session != "" && kv.Session != s.id {
			if kv.Session == stale {
				cctx, ccancel := c.call(ctx)
				_, _ = c.client.Session().Destroy(stale, (&api.WriteOptions{}).WithContext(cctx))
				ccancel()
			}
			continue // held: block until the key changes
		}
		lead, err := c.tryLock(ctx, s, id)
		if lead != nil || ctx.Err() != nil {
			return lead, err
		}
		// Lost a race, hit the lock-delay, or the epoch moved: look again
		// at once, but not forever (e.g. the session was invalidated).
		if failures++; failures > 5 {
			return nil, fmt.Errorf("consul: cannot lock the controller key: %w", err)
		}
		waitIndex = 0
		if !sleep(ctx, 10*time.Millisecond*time.Duration(failures)) {
			return nil, ctx.Err()
		}
	}
}

// errNotLocked: the lock operation failed (held, lock-delay, or the
// session is invalid).
var errNotLocked = errors.New("controller key not locked")

// tryLock makes one attempt; (nil, err) when it did not get the lock.
func (c *Backend) tryLock(ctx context.Context, s *session, id int32) (*cluster.Leadership, error) {
	epoch, epochIndex, err := c.readCounter(ctx, keyControllerEpoch, 0)
	if err != nil {
		return nil, err
	}
	tx := &txn{}
	tx.add(&api.KVTxnOp{Verb: api.KVLock, Key: c.key(keyController), Session: s.id, Value: []byte(strconv.Itoa(int(id)))},
		func(what string) error { return fmt.Errorf("%w: %s", errNotLocked, what) })
	tx.add(&api.KVTxnOp{Verb: api.KVCAS, Key: c.key(keyControllerEpoch), Index: epochIndex, Value: []byte(strconv.FormatInt(epoch+1, 10))},
		func(string) error { return errCASMoved })
	resp, err := c.commit(ctx, tx)
	if err != nil {
		return nil, err
	}
	lockIndex := uint64(0)
	if len(resp.Results) > 0 && resp.Results[0].KV != nil {
		lockIndex = resp.Results[0].KV.ModifyIndex
	}
	l := &lease{s: s, epoch: epoch + 1, lost: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(s.ctx)
	c.mu.Lock()
	c.lease = l
	c.mu.Unlock()
	l.wg.Add(2)
	go c.watchLock(l, lockIndex)
	go c.superviseLease(l)
	c.log.Info("controller lock acquired", "epoch", l.epoch, "session", s.id)
	return &cluster.Leadership{Epoch: l.epoch, Fence: cluster.Fence{Session: s.id, Epoch: l.epoch}, Lost: l.lost}, nil
}

// watchLock ends the lease as soon as the controller key is not held by
// its session any more (released, session invalidated, key deleted).
func (c *Backend) watchLock(l *lease, index uint64) {
	defer l.wg.Done()
	for {
		cctx, cancel := c.blocking(l.ctx, watchWait)
		kv, meta, err := c.client.KV().Get(c.key(keyController), (&api.QueryOptions{WaitIndex: index, WaitTime: watchWait}).WithContext(cctx))
		cancel()
		switch {
		case l.ctx.Err() != nil:
			return
		case err != nil:
			// superviseLease gives up if this lasts.
			sleep(l.ctx, 250*time.Millisecond)
			continue
		case kv == nil || kv.Session != l.s.id:
			c.loseLease(l, "the controller key is no longer held by this broker's session")
			return
		}
		index = meta.LastIndex
		if index < 1 {
			index = 1
		}
	}
}

// superviseLease ends the lease when its session ends, or when the agent
// has not taken a heartbeat for CheckTTL: Consul then considers this broker
// dead and frees the lock for another.
func (c *Backend) superviseLease(l *lease) {
	defer l.wg.Done()
	tick := time.NewTicker(c.cfg.CheckTTL / 10)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			if l.s.ctx.Err() != nil && !c.isClosed() {
				c.loseLease(l, "the controller session ended")
			}
			return
		case <-tick.C:
			if since := time.Since(time.Unix(0, c.lastBeat.Load())); since > c.cfg.CheckTTL {
				c.loseLease(l, fmt.Sprintf("no heartbeat reached Consul for %v", since.Round(time.Millisecond)))
				return
			}
		}
	}
}

// loseLease ends a lease that was lost (not resigned) and destroys its
// session in the background, so the lock is free as soon as Consul answers.
func (c *Backend) loseLease(l *lease, why string) {
	if !l.end() {
		return
	}
	c.log.Warn("lost the controller lock", "epoch", l.epoch, "reason", why)
	go func() {
		ctx, cancel := context.WithTimeout(c.closeCtx, requestTimeout)
		defer cancel()
		_ = c.closeSession(ctx, l.s)
	}()
}

// endLease ends l (closing Lost), waits for its goroutines and destroys its
// session.
func (c *Backend) endLease(ctx context.Context, l *lease) error {
	if l.end() {
		c.log.Info("resigned the controller lock", "epoch", l.epoch)
	}
	l.wg.Wait()
	return c.closeSession(ctx, l.s)
}

// Resign implements ControllerLock: destroying the session releases the
// key, and closes Lost.
func (c *Backend) Resign(ctx context.Context) error {
	c.mu.Lock()
	l := c.lease
	c.lease = nil
	c.mu.Unlock()
	if l == nil {
		return nil
	}
	return c.endLease(ctx, l)
}

// Controller implements ControllerLock: one read transaction of the lock
// key and the epoch, so both come from the same moment.
func (c *Backend) Controller(ctx context.Context) (int32, int64, bool, error) {
	if c.isClosed() {
		return -1, 0, false, cluster.ErrClosed
	}
	tx := &txn{}
	tx.add(&api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: c.key(keyController)}, nil)
	tx.add(&api.KVTxnOp{Verb: api.KVGetOrEmpty, Key: c.key(keyControllerEpoch)}, nil)
	resp, err := c.commit(ctx, tx)
	if err != nil {
		return -1, 0, false, err
	}
	if len(resp.Results) != 2 || resp.Results[0].KV == nil || resp.Results[1].KV == nil {
		return -1, 0, false, errors.New("consul: unexpected answer to the controller read")
	}
	lock, ep := resp.Results[0].KV, resp.Results[1].KV
	if lock.Session == "" {
		return -1, 0, false, nil
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(lock.Value)), 10, 32)
	if err != nil {
		return -1, 0, false, fmt.Errorf("consul key %s: %q is not a broker id", lock.Key, lock.Value)
	}
	var epoch int64
	if len(ep.Value) > 0 {
		if epoch, err = strconv.ParseInt(strings.TrimSpace(string(ep.Value)), 10, 64); err != nil {
			return -1, 0, false, fmt.Errorf("consul key %s: %q is not an epoch", ep.Key, ep.Value)
		}
	}
	return int32(id), epoch, true, nil
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
