package transport

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// Defaults of the connection limits (Config), as Kafka's max.connections,
// max.connections.per.ip and connections.max.idle.ms bound a broker.
const (
	DefaultMaxConnections      = 1000
	DefaultMaxConnectionsPerIP = 200
	DefaultIdleTimeout         = 10 * time.Minute
	// handshakeTimeout bounds the TLS handshake and HTTP/2 preface of a new
	// connection.
	handshakeTimeout = 10 * time.Second
	// connectTimeout bounds the wait for a stream's ConnectRequest, which
	// protoactor sends first.
	connectTimeout = 10 * time.Second
	// maxStreamsPerConn: protoactor opens one stream per connection.
	maxStreamsPerConn = 8
)

// ConnLimits are connection limits changed while the node runs: a zero
// keeps the configured limit, and PerIPOverrides, when not nil, replaces
// the configured overrides.
type ConnLimits struct {
	Max, PerIP     int
	PerIPOverrides map[string]int
}

// errConnRefused is what a connection over a limit gets: gRPC closes it.
var errConnRefused = errors.New("connection refused by a limit")

// ConnStats counts the connections a node's listener holds and refused.
type ConnStats struct {
	open          atomic.Int64
	refusedTotal  atomic.Int64
	refusedPerIP  atomic.Int64
	closedForIdle atomic.Int64
}

// Open is how many connections the listener holds now.
func (s *ConnStats) Open() int64 { return s.open.Load() }

// RefusedTotal is how many connections were refused for the total limit.
func (s *ConnStats) RefusedTotal() int64 { return s.refusedTotal.Load() }

// RefusedPerIP is how many connections were refused for the per-address limit.
func (s *ConnStats) RefusedPerIP() int64 { return s.refusedPerIP.Load() }

// ClosedForIdle is how many connections were closed for sending nothing
// for the idle timeout.
func (s *ConnStats) ClosedForIdle() int64 { return s.closedForIdle.Load() }

// connLimiter wraps a node's server credentials: the handshake of every
// accepted connection passes through it, so it can count connections per
// remote address, refuse those over a limit before they cost a TLS
// handshake or gRPC's buffers, and close connections that stay silent.
type connLimiter struct {
	credentials.TransportCredentials
	max, maxPerIP int
	overrides     map[string]int
	limits        func() ConnLimits // nil: the fields above
	idle          time.Duration
	stats         *ConnStats
	guard         *GuardStats // for its log spacing
	logger        *slog.Logger

	mu   sync.Mutex
	byIP map[string]int
	// conns are the admitted connections by remote address, for close.
	conns map[string]*limitedConn
}

func newConnLimiter(creds credentials.TransportCredentials, cfg Config, guard *GuardStats, logger *slog.Logger) *connLimiter {
	l := &connLimiter{TransportCredentials: creds, max: cfg.MaxConnections, maxPerIP: cfg.MaxConnectionsPerIP,
		overrides: cfg.MaxConnectionsPerIPOverrides, limits: cfg.Limits, idle: cfg.IdleTimeout, stats: &ConnStats{}, guard: guard, logger: logger, byIP: map[string]int{},
		conns: map[string]*limitedConn{}}
	if l.max <= 0 {
		l.max = DefaultMaxConnections
	}
	if l.maxPerIP <= 0 {
		l.maxPerIP = DefaultMaxConnectionsPerIP
	}
	if l.idle <= 0 {
		l.idle = DefaultIdleTimeout
	}
	return l
}

// admit counts a new connection from ip, or says which limit refuses it.
func (l *connLimiter) admit(ip string) string {
	most, mostPerIP, overrides := l.max, l.maxPerIP, l.overrides
	if l.limits != nil {
		now := l.limits()
		most, mostPerIP = cmp.Or(now.Max, most), cmp.Or(now.PerIP, mostPerIP)
		if now.PerIPOverrides != nil {
			overrides = now.PerIPOverrides
		}
	}
	if n, ok := overrides[ip]; ok {
		mostPerIP = n
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case int(l.stats.open.Load()) >= most:
		l.stats.refusedTotal.Add(1)
		return fmt.Sprintf("the node holds %d connections, its limit", most)
	case l.byIP[ip] >= mostPerIP:
		l.stats.refusedPerIP.Add(1)
		return fmt.Sprintf("%s holds %d connections, the limit per address", ip, mostPerIP)
	}
	l.byIP[ip]++
	l.stats.open.Add(1)
	return ""
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
	l.stats.open.Add(-1)
}

func (l *connLimiter) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	ip := raw.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	if why := l.admit(ip); why != "" {
		if l.guard.shouldLog() {
			l.logger.Warn("refused a connection", "peer", raw.RemoteAddr().String(), "reason", why,
				"refused_total", l.stats.RefusedTotal(), "refused_per_address", l.stats.RefusedPerIP())
		}
		raw.Close()
		return nil, nil, errConnRefused
	}
	_ = raw.SetDeadline(time.Now().Add(handshakeTimeout))
	conn, info, err := l.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		l.release(ip)
		return nil, nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	lc := &limitedConn{Conn: conn, limiter: l, ip: ip, remote: raw.RemoteAddr().String()}
	l.mu.Lock()
	l.conns[lc.remote] = lc
	l.mu.Unlock()
	return lc, info, nil
}

// closeConn closes the admitted connection from the remote address
// remote, if it is still open.
func (l *connLimiter) closeConn(remote string) {
	l.mu.Lock()
	c := l.conns[remote]
	l.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (l *connLimiter) Clone() credentials.TransportCredentials { return l }

// limitedConn is an admitted connection: it gives its place back when it
// closes, and fails a read that waits longer than the idle timeout, which
// closes it (a live peer sends keepalive pings every few seconds).
type limitedConn struct {
	net.Conn
	limiter *connLimiter
	ip      string
	remote  string
	once    sync.Once
}

func (c *limitedConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.limiter.idle))
	n, err := c.Conn.Read(p)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		c.limiter.stats.closedForIdle.Add(1)
		if c.limiter.guard.shouldLog() {
			c.limiter.logger.Info("closed an idle connection", "peer", c.RemoteAddr().String(), "idle", c.limiter.idle,
				"closed_total", c.limiter.stats.ClosedForIdle())
		}
	}
	return n, err
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.limiter.mu.Lock()
		delete(c.limiter.conns, c.remote)
		c.limiter.mu.Unlock()
		c.limiter.release(c.ip)
	})
	return c.Conn.Close()
}
