package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/consul/api"
)

// membership is this broker's registration and its keepalive.
type membership struct {
	broker Broker
	reg    *api.AgentServiceRegistration
	check  string // the TTL check's id, "service:<service id>"
	stop   context.CancelFunc
	done   chan struct{} // closed when the keepalive has returned
}

func (c *Consul) serviceName() string { return "sluice-" + c.cfg.Cluster }

func (c *Consul) serviceID(id int32) string { return fmt.Sprintf("sluice-%s-%d", c.cfg.Cluster, id) }

// Service meta keys.
const (
	metaBrokerID = "broker_id"
	metaAddr     = "addr"
)

// deregisterAfter is how long a critical broker stays in the agent's
// catalog; it comes back at once if it heartbeats before then, and
// re-registers after.
const deregisterAfter = time.Minute

func (c *Consul) registration(b Broker) (*api.AgentServiceRegistration, error) {
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
	id := c.serviceID(b.ID)
	return &api.AgentServiceRegistration{
		ID: id, Name: c.serviceName(), Address: host, Port: port,
		Meta: map[string]string{metaBrokerID: strconv.Itoa(int(b.ID)), metaAddr: b.Addr},
		Check: &api.AgentServiceCheck{
			CheckID: "service:" + id,
			Name:    "sluice broker heartbeat",
			TTL:     c.cfg.CheckTTL.String(),
			// Passing from the start, so a session can use it at once.
			Status:                         api.HealthPassing,
			DeregisterCriticalServiceAfter: deregisterAfter.String(),
		},
	}, nil
}

// Register implements Membership: an agent service with a TTL check, and a
// keepalive passing the check every CheckTTL/3 that re-registers whenever
// the agent lost the registration.
func (c *Consul) Register(ctx context.Context, b Broker) error {
	if c.isClosed() {
		return ErrClosed
	}
	reg, err := c.registration(b)
	if err != nil {
		return err
	}
	if err := c.register(ctx, reg, requestTimeout); err != nil {
		return err
	}
	c.lastBeat.Store(time.Now().UnixNano())
	kctx, stop := context.WithCancel(c.closeCtx)
	m := &membership{broker: b, reg: reg, check: reg.Check.CheckID, stop: stop, done: make(chan struct{})}
	c.mu.Lock()
	old := c.member
	c.member = m
	c.mu.Unlock()
	if old != nil {
		old.stop()
		<-old.done
		if old.reg.ID != reg.ID {
			_ = c.deregister(ctx, old)
		}
	}
	go c.keepalive(kctx, m)
	c.log.Info("broker registered", "broker", b.ID, "service", reg.ID, "check_ttl", c.cfg.CheckTTL)
	return nil
}

func (c *Consul) register(ctx context.Context, reg *api.AgentServiceRegistration, timeout time.Duration) error {
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
func (c *Consul) keepalive(ctx context.Context, m *membership) {
	defer close(m.done)
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
			c.lastBeat.Store(time.Now().UnixNano())
		}
		if !joined {
			c.log.Info("broker rejoined Consul", "broker", m.broker.ID)
			joined = true
		}
	}
}

// heartbeat passes the TTL check once.
func (c *Consul) heartbeat(ctx context.Context, m *membership) error {
	cctx, cancel := c.bounded(ctx, c.cfg.CheckTTL/2)
	defer cancel()
	err := c.client.Agent().UpdateTTLOpts(m.check, "", api.HealthPassing, (&api.QueryOptions{}).WithContext(cctx))
	if err == nil {
		c.lastBeat.Store(time.Now().UnixNano())
	}
	return err
}

// Deregister implements Membership. Removing the service also removes its
// check, which ends this broker's controller session if it has one.
func (c *Consul) Deregister(ctx context.Context) error {
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

func (c *Consul) deregister(ctx context.Context, m *membership) error {
	cctx, cancel := c.call(ctx)
	defer cancel()
	if err := c.client.Agent().ServiceDeregisterOpts(m.reg.ID, (&api.QueryOptions{}).WithContext(cctx)); err != nil {
		return c.failed(ctx, fmt.Errorf("consul: deregister service %s: %w", m.reg.ID, err))
	}
	c.log.Info("broker deregistered", "broker", m.broker.ID)
	return nil
}

// WatchBrokers implements Membership: a blocking health query for the
// brokers whose checks pass.
func (c *Consul) WatchBrokers(ctx context.Context, afterIndex uint64) ([]Broker, uint64, error) {
	if c.isClosed() {
		return nil, 0, ErrClosed
	}
	wait, base := c.brokerIdx.wait(afterIndex)
	cctx, cancel := c.blocking(ctx, watchWait)
	defer cancel()
	q := &api.QueryOptions{WaitIndex: wait, WaitTime: watchWait}
	entries, meta, err := c.client.Health().Service(c.serviceName(), "", true, q.WithContext(cctx))
	if err != nil {
		return nil, 0, c.failed(ctx, fmt.Errorf("consul: health of %s: %w", c.serviceName(), err))
	}
	brokers := make([]Broker, 0, len(entries))
	for _, e := range entries {
		if b, err := brokerOf(e); err == nil && !slices.ContainsFunc(brokers, func(x Broker) bool { return x.ID == b.ID }) {
			brokers = append(brokers, b)
		}
	}
	slices.SortFunc(brokers, func(x, y Broker) int { return int(x.ID) - int(y.ID) })
	return brokers, c.brokerIdx.observe(wait, base, meta.LastIndex), nil
}

func brokerOf(e *api.ServiceEntry) (Broker, error) {
	s := e.Service
	id, err := strconv.ParseInt(s.Meta[metaBrokerID], 10, 32)
	if err != nil {
		return Broker{}, errors.New("no broker id")
	}
	addr := s.Meta[metaAddr]
	if addr == "" {
		host := s.Address
		if host == "" && e.Node != nil {
			host = e.Node.Address
		}
		addr = net.JoinHostPort(host, strconv.Itoa(s.Port))
	}
	return Broker{ID: int32(id), Addr: addr}, nil
}
