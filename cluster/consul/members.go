package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/consul/api"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// membership is this broker's registration and its keepalive.
type membership struct {
	broker   cluster.Broker
	instance string // random per process start
	reg      *api.AgentServiceRegistration
	check    string // the TTL check's id, "service:<service id>"
	stop     context.CancelFunc
	done     chan struct{} // closed when keepalive and claim watch have returned
}

func (c *Backend) serviceName() string { return "sluice-" + c.cfg.Cluster }

// serviceID names one process's registration of a broker: two processes
// started with the same id register side by side instead of overwriting
// each other, and the id's claim decides which one is the broker.
func (c *Backend) serviceID(id int32, instance string) string {
	return fmt.Sprintf("sluice-%s-%d-%s", c.cfg.Cluster, id, instance)
}

// Service meta keys.
const (
	metaBrokerID = "broker_id"
	metaAddr     = "addr"
	metaEpoch    = "broker_epoch"
	metaInstance = "instance"
	metaDir      = "data_dir_id"
	metaVersion  = "version"
	metaKafka    = "kafka_addr"
	metaRack     = "rack"
)

// deregisterAfter is how long a critical broker stays in the agent's
// catalog; it comes back at once if it heartbeats before then, and
// re-registers after.
const deregisterAfter = time.Minute

func (c *Backend) registration(b cluster.Broker, instance string) (*api.AgentServiceRegistration, error) {
	if b.ID < 0 {
		return nil, fmt.Errorf("broker id %d: must not be negative", b.ID)
	}
	host, portText, err := net.SplitHostPort(b.Addr)
	if err != nil {
		return nil, fmt.Errorf("broker address %q: %w", b.Addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("broker address %q: bad port", b.Addr)
	}
	id := c.serviceID(b.ID, instance)
	return &api.AgentServiceRegistration{
		ID: id, Name: c.serviceName(), Address: host, Port: port,
		Meta: map[string]string{metaBrokerID: strconv.Itoa(int(b.ID)), metaAddr: b.Addr,
			metaEpoch: strconv.FormatInt(b.Epoch, 10), metaInstance: instance, metaDir: b.Dir, metaVersion: b.Version, metaKafka: b.KafkaAddr, metaRack: b.Rack},
		Check: &api.AgentServiceCheck{
			CheckID: "service:" + id,
			Name:    "sluice broker heartbeat",
			TTL:     c.cfg.CheckTTL.String(),
			// Warning (not passing, so no broker watch lists it yet) until
			// this process holds the id's claim; a session can use it.
			Status:                         api.HealthWarning,
			DeregisterCriticalServiceAfter: deregisterAfter.String(),
		},
	}, nil
}

// Register implements Membership:
//  1. a new broker epoch from the broker_epoch counter;
//  2. an agent service of this process with a TTL check;
//  3. the claim of the broker id: the key brokers/<id> locked by a session
//     tied to that check. While another live process holds it, Register
//     waits up to twice CheckTTL (a killed holder's check goes critical by
//     then, which frees the claim) and then fails with ErrBrokerIDInUse;
//  4. the first heartbeat, which makes the broker visible to WatchBrokers.
//
// A keepalive then passes the check every CheckTTL/3, re-registering
// whenever the agent lost the registration, and the claim is taken again
// (under the same epoch) when Consul dropped it; if another process took
// it meanwhile, Evicted is closed.
func (c *Backend) Register(ctx context.Context, b cluster.Broker) (cluster.Broker, error) {
	if c.isClosed() {
		return cluster.Broker{}, cluster.ErrClosed
	}
	c.mu.Lock()
	registered := c.member != nil
	c.mu.Unlock()
	if registered {
		return cluster.Broker{}, errors.New("cluster: Register called twice")
	}
	if _, err := c.registration(b, "x"); err != nil {
		return cluster.Broker{}, err
	}
	epoch, err := c.nextBrokerEpoch(ctx)
	if err != nil {
		return cluster.Broker{}, err
	}
	b.Epoch = epoch
	instance := cluster.NewID()[:12]
	reg, _ := c.registration(b, instance)
	if err := c.register(ctx, reg, requestTimeout); err != nil {
		return cluster.Broker{}, err
	}
	m := &membership{broker: b, instance: instance, reg: reg, check: reg.Check.CheckID, done: make(chan struct{})}
	claim, err := c.claim(ctx, m)
	if err != nil {
		_ = c.deregister(context.WithoutCancel(ctx), m)
		return cluster.Broker{}, err
	}
	if err := c.heartbeat(ctx, m); err != nil {
		_ = c.closeSession(context.WithoutCancel(ctx), claim)
		_ = c.deregister(context.WithoutCancel(ctx), m)
		return cluster.Broker{}, err
	}
	kctx, stop := context.WithCancel(c.closeCtx)
	m.stop = stop
	c.mu.Lock()
	c.member = m
	c.mu.Unlock()
	keepalive, watch := make(chan struct{}), make(chan struct{})
	go func() { defer close(keepalive); c.keepalive(kctx, m) }()
	go func() { defer close(watch); c.watchClaim(kctx, m, claim) }()
	go func() { <-keepalive; <-watch; close(m.done) }()
	c.log.Info("broker registered", "broker", b.ID, "broker_epoch", b.Epoch, "service", reg.ID, "check_ttl", c.cfg.CheckTTL)
	return b, nil
}

// nextBrokerEpoch increments the broker_epoch counter.
func (c *Backend) nextBrokerEpoch(ctx context.Context) (int64, error) {
	last, err := c.addToCounter(ctx, keyBrokerEpoch, 0, 1, nil)
	return last + 1, err
}

// claimWait is how long Register waits for another process's claim of the
// same broker id to go away.
func (c *Backend) claimWait() time.Duration { return 2*c.cfg.CheckTTL + time.Second }

// claim locks brokers/<id> for m with a new session tied to m's check,
// waiting out a claim of a process that died.
func (c *Backend) claim(ctx context.Context, m *membership) (*session, error) {
	value, err := proto.Marshal(&messages.BrokerRegistration{Id: m.broker.ID, Address: m.broker.Addr,
		StartedUnixMs: time.Now().UnixMilli(), Epoch: m.broker.Epoch, Instance: m.instance})
	if err != nil {
		return nil, err
	}
	key := c.key(brokersPrefix + strconv.Itoa(int(m.broker.ID)))
	deadline := time.Now().Add(c.claimWait())
	var s *session
	var holder *messages.BrokerRegistration
	var waitIndex uint64
	for {
		// Keep this process's check alive (and not passing) while it waits.
		wctx, wcancel := c.bounded(ctx, c.cfg.CheckTTL/2)
		_ = c.client.Agent().UpdateTTLOpts(m.check, "waiting for the broker id claim", api.HealthWarning, (&api.QueryOptions{}).WithContext(wctx))
		wcancel()
		if s == nil || s.ctx.Err() != nil {
			if s, err = c.newSession(ctx, m, "broker"); err != nil {
				return nil, err
			}
		}
		cctx, cancel := c.call(ctx)
		ok, _, err := c.client.KV().Acquire(&api.KVPair{Key: key, Value: value, Session: s.id}, (&api.WriteOptions{}).WithContext(cctx))
		cancel()
		if err == nil && ok {
			return s, nil
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			_ = c.closeSession(context.WithoutCancel(ctx), s)
			if holder != nil {
				return nil, fmt.Errorf("%w: broker %d is held by the process at %s (broker epoch %d, started %s), which is still heartbeating; stop it or start this broker with another --id",
					cluster.ErrBrokerIDInUse, m.broker.ID, holder.Address, holder.Epoch, time.UnixMilli(holder.StartedUnixMs).Format(time.RFC3339))
			}
			if err == nil {
				err = errors.New("the claim key stayed locked")
			}
			return nil, fmt.Errorf("cluster: cannot claim broker id %d: %w", m.broker.ID, c.failed(ctx, err))
		}
		// Held: wait for the key to change (the holder's session ending
		// releases it), at most until the deadline.
		wait := min(left, c.cfg.CheckTTL/3)
		bctx, bcancel := c.blocking(ctx, wait)
		kv, meta, gerr := c.client.KV().Get(key, (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: wait}).WithContext(bctx))
		bcancel()
		switch {
		case gerr != nil:
			sleep(ctx, 100*time.Millisecond)
		case kv != nil && kv.Session != "" && kv.Session != s.id:
			h := &messages.BrokerRegistration{}
			if proto.Unmarshal(kv.Value, h) == nil {
				holder = h
			}
			waitIndex = meta.LastIndex
		default:
			waitIndex = 0
		}
	}
}

// watchClaim keeps the claim while the process runs: when Consul dropped
// it (a restarted agent, a session invalidated while the agent was
// unreachable) it is locked again under a new session; when another
// process holds it, this one has been replaced and Evicted is closed.
func (c *Backend) watchClaim(ctx context.Context, m *membership, s *session) {
	key := c.key(brokersPrefix + strconv.Itoa(int(m.broker.ID)))
	defer func() {
		if s != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.closeSession(cctx, s)
			cancel()
		}
	}()
	var index uint64
	retry := newBackoff(250*time.Millisecond, 5*time.Second)
	lost := false // logged once per loss, not per attempt
	for ctx.Err() == nil {
		bctx, cancel := c.blocking(ctx, watchWait)
		kv, meta, err := c.client.KV().Get(key, (&api.QueryOptions{WaitIndex: index, WaitTime: watchWait}).WithContext(bctx))
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			retry.wait(ctx)
			continue
		}
		if meta.LastIndex < index {
			index = 0 // Consul's index went backwards
			continue
		}
		index = meta.LastIndex
		if s != nil && kv != nil && kv.Session == s.id && s.ctx.Err() == nil {
			if lost {
				c.log.Info("broker id claimed again", "broker", m.broker.ID)
				lost = false
			}
			retry.reset()
			continue // ours
		}
		if kv != nil && kv.Session != "" && (s == nil || kv.Session != s.id) {
			h := &messages.BrokerRegistration{}
			if proto.Unmarshal(kv.Value, h) == nil && h.Instance != m.instance {
				c.log.Error("another process took over this broker id", "broker", m.broker.ID, "by", h.Address, "broker_epoch", h.Epoch)
				c.evictOnce.Do(func() { close(c.evicted) })
				return
			}
		}
		// Free, or held by a session of ours that ended: claim it again.
		if !lost {
			c.log.Warn("broker id claim lost; claiming it again", "broker", m.broker.ID)
			lost = true
		}
		if s != nil && s.ctx.Err() != nil {
			old := s
			s = nil
			cctx, cancel := context.WithTimeout(ctx, requestTimeout)
			_ = c.closeSession(cctx, old)
			cancel()
		}
		if s == nil {
			ns, err := c.newSession(ctx, m, "broker")
			if err != nil {
				retry.wait(ctx)
				continue
			}
			s = ns
		}
		value, _ := proto.Marshal(&messages.BrokerRegistration{Id: m.broker.ID, Address: m.broker.Addr,
			StartedUnixMs: time.Now().UnixMilli(), Epoch: m.broker.Epoch, Instance: m.instance})
		cctx, cancel := c.call(ctx)
		ok, _, err := c.client.KV().Acquire(&api.KVPair{Key: key, Value: value, Session: s.id}, (&api.WriteOptions{}).WithContext(cctx))
		cancel()
		if err != nil || !ok {
			// Refused: the session may be gone (invalidated with the check
			// while the agent restarted) or the key still in its
			// lock-delay. Start from a new session, after a pause.
			c.log.Debug("broker id claim refused", "broker", m.broker.ID, "error", err)
			old := s
			s = nil
			cctx, cancel := context.WithTimeout(ctx, requestTimeout)
			_ = c.closeSession(cctx, old)
			cancel()
			retry.wait(ctx)
		}
		index = 0
	}
}

// Evicted implements Membership.
func (c *Backend) Evicted() <-chan struct{} { return c.evicted }

func (c *Backend) register(ctx context.Context, reg *api.AgentServiceRegistration, timeout time.Duration) error {
	cctx, cancel := c.bounded(ctx, timeout)
	defer cancel()
	// The agent syncs the registration to the catalog before it answers.
	if err := c.client.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{}.WithContext(cctx)); err != nil {
		return c.failed(ctx, fmt.Errorf("consul: register service %s: %w", reg.ID, err))
	}
	return nil
}

// keepalive heartbeats until stopped, logging when the broker drops out of
// Consul and when it is back.
func (c *Backend) keepalive(ctx context.Context, m *membership) {
	tick := time.NewTicker(c.cfg.CheckTTL / 3)
	defer tick.Stop()
	joined := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := c.heartbeat(ctx, m)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The agent is unreachable, or it does not know the check (it
			// restarted without its state, or reaped the service after it
			// went critical): register again, which fails harmlessly in
			// the first case and rejoins in the second.
			if joined {
				c.log.Warn("broker lost its Consul registration; retrying", "broker", m.broker.ID, "error", err)
				joined = false
			}
			if err = c.register(ctx, m.reg, c.cfg.CheckTTL); err != nil {
				continue
			}
			if err = c.heartbeat(ctx, m); err != nil {
				continue
			}
		}
		if !joined {
			c.log.Info("broker rejoined Consul", "broker", m.broker.ID)
			joined = true
		}
	}
}

// heartbeat passes the TTL check once.
func (c *Backend) heartbeat(ctx context.Context, m *membership) error {
	cctx, cancel := c.bounded(ctx, c.cfg.CheckTTL/2)
	defer cancel()
	err := c.client.Agent().UpdateTTLOpts(m.check, "", api.HealthPassing, (&api.QueryOptions{}).WithContext(cctx))
	if err == nil {
		c.lastBeat.Store(time.Now().UnixNano())
	}
	return err
}

// Deregister implements Membership. Removing the service also removes its
// check, which ends this broker's sessions: its claim and, if it has one,
// its controller lock.
func (c *Backend) Deregister(ctx context.Context) error {
	c.mu.Lock()
	m := c.member
	c.member = nil
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	m.stop()
	<-m.done
	return c.deregister(ctx, m)
}

func (c *Backend) deregister(ctx context.Context, m *membership) error {
	cctx, cancel := c.call(ctx)
	defer cancel()
	if err := c.client.Agent().ServiceDeregisterOpts(m.reg.ID, (&api.QueryOptions{}).WithContext(cctx)); err != nil {
		return c.failed(ctx, fmt.Errorf("consul: deregister service %s: %w", m.reg.ID, err))
	}
	c.log.Info("broker deregistered", "broker", m.broker.ID)
	return nil
}

// WatchBrokers implements Membership: a blocking health query for the
// brokers whose checks pass. A process that has not claimed its broker id
// yet is not passing; of two registrations of one id (a restarted broker
// whose old registration has not expired yet) the newer epoch wins.
func (c *Backend) WatchBrokers(ctx context.Context, afterIndex uint64) ([]cluster.Broker, uint64, error) {
	if c.isClosed() {
		return nil, 0, cluster.ErrClosed
	}
	wait, base := c.brokerIdx.wait(afterIndex)
	cctx, cancel := c.blocking(ctx, watchWait)
	defer cancel()
	q := &api.QueryOptions{WaitIndex: wait, WaitTime: watchWait}
	entries, meta, err := c.client.Health().Service(c.serviceName(), "", true, q.WithContext(cctx))
	if err != nil {
		return nil, 0, c.failed(ctx, fmt.Errorf("consul: health of %s: %w", c.serviceName(), err))
	}
	brokers := make([]cluster.Broker, 0, len(entries))
	for _, e := range entries {
		b, err := brokerOf(e)
		if err != nil {
			continue
		}
		if i := slices.IndexFunc(brokers, func(x cluster.Broker) bool { return x.ID == b.ID }); i >= 0 {
			if b.Epoch > brokers[i].Epoch {
				brokers[i] = b
			}
			continue
		}
		brokers = append(brokers, b)
	}
	slices.SortFunc(brokers, func(x, y cluster.Broker) int { return int(x.ID) - int(y.ID) })
	index, _ := c.brokerIdx.observe(wait, base, meta.LastIndex)
	return brokers, index, nil
}

func brokerOf(e *api.ServiceEntry) (cluster.Broker, error) {
	s := e.Service
	id, err := strconv.ParseInt(s.Meta[metaBrokerID], 10, 32)
	if err != nil {
		return cluster.Broker{}, errors.New("no broker id")
	}
	epoch, err := strconv.ParseInt(s.Meta[metaEpoch], 10, 64)
	if err != nil || epoch <= 0 {
		return cluster.Broker{}, errors.New("no broker epoch")
	}
	addr := s.Meta[metaAddr]
	if addr == "" {
		host := s.Address
		if host == "" && e.Node != nil {
			host = e.Node.Address
		}
		addr = net.JoinHostPort(host, strconv.Itoa(s.Port))
	}
	return cluster.Broker{ID: int32(id), Addr: addr, Epoch: epoch, Dir: s.Meta[metaDir], Version: s.Meta[metaVersion], KafkaAddr: s.Meta[metaKafka], Rack: s.Meta[metaRack]}, nil
}
