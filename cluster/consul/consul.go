package consul

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/sluicemq/sluice/cluster"
)

// Backend is the multi-broker backend: metadata in Consul's KV store,
// membership as agent services with TTL checks, and the controller as a
// KV lock held by a session tied to the controller's own TTL check.
//
// Every key lives under "sluice/<cluster>/":
//
//	cluster_id                      random hex id, created once (CAS on index 0)
//	                                by the first broker started with an empty
//	                                data directory
//	topics/<name>                   messages.TopicRecord (protobuf binary)
//	partitions/<topic>/<partition>  messages.PartitionState (protobuf binary);
//	                                its ModifyIndex is Partition.Version
//	controller                      the lock key: held by the controller's
//	                                session, value = broker id (decimal text)
//	controller_epoch                decimal counter, +1 with every acquisition
//	producer_ids                    decimal next producer id (absent = 1)
//	broker_epoch                    decimal last broker epoch handed out
//	brokers/<id>                    the id's claim, locked by the session of
//	                                the process that holds it
//	deleted_topics/<topic id>       messages.TopicDeletion of a deleted topic
//	security                        messages.SecurityRecord (ACLs and token
//	                                users); its ModifyIndex is
//	                                Snapshot.SecurityVersion
//
// A Snapshot is one List of the prefix; its Index is the list's
// X-Consul-Index (kept from going backwards, see indexMap).
//
// Every metadata write is a Consul transaction (CreateTopic of more than
// about 125 partitions takes several) whose first operation checks that the
// controller key is still held by the writer's Fence.Session, so a deposed
// controller's write fails with cluster.ErrFenced. The zero Fence is refused.
//
// Unlike cluster.Embedded, Campaign needs Register first (the session hangs on the
// broker's TTL check), and Resign closes Leadership.Lost.
type Backend struct {
	cfg    Config
	log    *slog.Logger
	client *api.Client
	http   *http.Transport // to drop idle connections on Close
	prefix string

	closeCtx context.Context // ends on Close; every call is bounded by it
	closeFn  context.CancelFunc

	// bound is the cluster id this process first read from the store, with
	// the index Consul wrote it at; every controller write checks it.
	bound atomic.Pointer[boundClusterID]

	metaIdx   indexMap // cluster.Snapshot.Index, guarded against Consul going backwards
	brokerIdx indexMap // WatchBrokers' index, likewise

	// lastBeat is when the agent last accepted our TTL heartbeat (UnixNano);
	// a controller that cannot heartbeat for CheckTTL steps down.
	lastBeat atomic.Int64

	// evicted is closed when another process took this broker's id.
	evicted   chan struct{}
	evictOnce sync.Once

	mu     sync.Mutex
	member *membership // this broker's registration, nil before Register
	lease  *lease      // the current leadership, nil when not controller
	closed bool
}

var _ cluster.Backend = (*Backend)(nil)

// boundClusterID is the store's cluster id key as this process first read it.
type boundClusterID struct {
	id    string
	index uint64 // the key's ModifyIndex: written once, so a new key has another
}

// bindClusterID records the first cluster id read from the store.
func (c *Backend) bindClusterID(kv *api.KVPair) {
	if kv == nil || len(kv.Value) == 0 {
		return
	}
	c.bound.CompareAndSwap(nil, &boundClusterID{id: string(kv.Value), index: kv.ModifyIndex})
}

// Config configures Open.
type Config struct {
	// Addr of the Consul agent's HTTP API, "host:port" (e.g. "127.0.0.1:8500")
	// or with a scheme ("https://consul:8501", "unix:///run/consul.sock").
	Addr string
	// Cluster names this Sluice cluster; its keys live under "sluice/<Cluster>/"
	// and its brokers register as service "sluice-<Cluster>".
	Cluster string
	// CheckTTL is the TTL of each broker's health check (default 3s). A broker
	// silent for that long is dead, and a dead controller's lock is released.
	CheckTTL time.Duration
	// SessionTTL is the controller session's TTL (default 10s), a backstop
	// behind the health check. Consul rejects TTLs below 10s by default.
	SessionTTL time.Duration
	// Logger receives membership and leadership changes (default slog.Default()).
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultCheckTTL   = 3 * time.Second
	DefaultSessionTTL = 10 * time.Second
)

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate reports the first invalid field. Zero durations mean the default.
func (c Config) Validate() error {
	switch {
	case c.Addr == "":
		return errors.New("consul.Config.Addr: empty, want the Consul agent's host:port")
	case !strings.Contains(c.Addr, "://"):
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return fmt.Errorf("consul.Config.Addr %q: want host:port or a URL: %v", c.Addr, err)
		}
	}
	if !clusterNameRE.MatchString(c.Cluster) {
		return fmt.Errorf("consul.Config.Cluster %q: want 1 to 64 letters, digits, '-' or '_'", c.Cluster)
	}
	if c.CheckTTL != 0 && c.CheckTTL < time.Second {
		return fmt.Errorf("consul.Config.CheckTTL %v: must be at least 1s", c.CheckTTL)
	}
	if c.SessionTTL != 0 && (c.SessionTTL < 10*time.Second || c.SessionTTL > 24*time.Hour) {
		return fmt.Errorf("consul.Config.SessionTTL %v: must be between 10s and 24h (Consul's limits)", c.SessionTTL)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.CheckTTL == 0 {
		c.CheckTTL = DefaultCheckTTL
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Open returns the Consul backend of cfg.Cluster. It does not contact
// Consul: the first call does, and creates the cluster id if needed.
func Open(cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// DefaultConfig also picks up CONSUL_HTTP_TOKEN, TLS settings and the like.
	acfg := api.DefaultConfig()
	acfg.Address = cfg.Addr // NewClient splits off a scheme (http, https, unix)
	client, err := api.NewClient(acfg)
	if err != nil {
		return nil, fmt.Errorf("consul client for %s: %w", cfg.Addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Backend{
		cfg: cfg, log: cfg.Logger.With("consul", cfg.Addr, "cluster", cfg.Cluster),
		client: client, http: acfg.Transport, prefix: "sluice/" + cfg.Cluster + "/",
		closeCtx: ctx, closeFn: cancel, evicted: make(chan struct{}),
	}, nil
}

// Timing of Consul calls.
const (
	// requestTimeout bounds a non-blocking call, so a frozen agent cannot
	// hang a caller that passed a context without deadline.
	requestTimeout = 10 * time.Second
	// watchWait is the longest a blocking query waits for a change.
	watchWait = 25 * time.Second
)

// call returns a context for one non-blocking request: ctx, bounded by
// requestTimeout and by Close.
func (c *Backend) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return c.bounded(ctx, requestTimeout)
}

// blocking returns a context for a blocking query that waits up to wait:
// Consul adds up to wait/16 of jitter, then the answer has to travel.
func (c *Backend) blocking(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return c.bounded(ctx, wait+wait/16+requestTimeout)
}

func (c *Backend) bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d)
	stop := context.AfterFunc(c.closeCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// failed maps the error of a call made with ctx: ErrClosed once the backend
// is closed, the caller's own ctx error when it ended, else err.
func (c *Backend) failed(ctx context.Context, err error) error {
	switch {
	case c.closeCtx.Err() != nil:
		return cluster.ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

func (c *Backend) isClosed() bool { return c.closeCtx.Err() != nil }

// Close implements Backend: it resigns, deregisters the broker and stops
// every background goroutine. Calls after Close return ErrClosed.
func (c *Backend) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rerr := c.Resign(ctx)
	derr := c.Deregister(ctx)
	c.closeFn()
	c.http.CloseIdleConnections()
	return errors.Join(rerr, derr)
}

// key returns the full Consul key of a name under the cluster's prefix.
func (c *Backend) key(name string) string { return c.prefix + name }

func topicKey(name string) string { return "topics/" + name }

func partitionKey(topic string, p int32) string { return fmt.Sprintf("partitions/%s/%d", topic, p) }

func partitionsPrefix(topic string) string { return "partitions/" + topic + "/" }

// Keys outside topics/ and partitions/.
const (
	keyClusterID       = "cluster_id"
	keyController      = "controller"
	keyControllerEpoch = "controller_epoch"
	keyProducerIDs     = "producer_ids"
	keyBrokerEpoch     = "broker_epoch"
	keySecurity        = "security"
	// deletedPrefix + topic id records a topic deletion (messages.TopicDeletion).
	deletedPrefix = "deleted_topics/"
	// brokersPrefix + broker id is a broker id's claim, locked by the
	// session of the process that holds it (messages.BrokerRegistration).
	brokersPrefix = "brokers/"
)
