package kafka

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/internal/logspace"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/metrics"
)

// Broker is how handlers reach the broker they serve, the local broker
// actor. Ask sends at once, so requests reach the broker in the order they
// are sent (a connection's produce requests are applied in arrival order).
type Broker interface {
	// Ask sends req on behalf of c and returns its coming answer, which
	// fails after timeout.
	Ask(c Caller, req proto.Message, timeout time.Duration) Answer
}

// Caller is who sent a request: the connection's principal (from its TLS
// certificate, else the anonymous one) and its remote address. The broker
// authorizes the request as it does one from its actor listener.
type Caller struct {
	Principal string
	Peer      string
}

// Answer is the answer to an Ask.
type Answer interface {
	Wait() (proto.Message, error)
}

// Config is a listener's settings.
type Config struct {
	Broker Broker
	// MaxFrameBytes is the largest request frame read; a larger size
	// prefix closes the connection before the body is read.
	MaxFrameBytes int
	// MaxConnections and MaxConnectionsPerIP bound the open connections;
	// MaxConnectionsPerIPOverrides gives some addresses (canonical IP
	// strings) limits of their own.
	MaxConnections               int
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[string]int
	// A new connection is pending until its first request has arrived
	// (after its TLS handshake), which must be within FirstRequestTimeout;
	// MaxPending and MaxPendingPerIP bound the pending connections apart
	// from the established ones, so connections that never send a byte
	// cannot take the places of clients.
	MaxPending          int
	MaxPendingPerIP     int
	FirstRequestTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing this long.
	IdleTimeout time.Duration
	// RequestTimeout bounds one request's wait on the broker.
	RequestTimeout time.Duration
	// MaxInFlight is how many requests of one connection are served at
	// once; the reader waits for the oldest answer beyond it.
	MaxInFlight int
	// Budget counts the bytes of requests read and not yet answered and
	// of answers not yet written, shared with the broker's other
	// listeners; a connection reads its next frame only when it has room
	// (nil: a budget of DefaultBudgetBytes for this listener alone).
	Budget *budget.Budget
	// FrameTimeout is how long a frame's body may take to arrive once its
	// size has been read.
	FrameTimeout time.Duration
	// MaxRequestEntries bounds the partitions, topics or groups one
	// request names; a request with more closes its connection.
	MaxRequestEntries int
	// MaxFetchBytes caps a fetch response's records, whatever the client
	// asks for.
	MaxFetchBytes int
	// TopicDefaults are the broker's topic configuration defaults, by
	// Kafka name, for DescribeConfigs, and TopicBuiltins Sluice's own
	// (a default that differs was set on the broker).
	TopicDefaults, TopicBuiltins map[string]string
	// BrokerID and BrokerSettings are this broker's id and settings under
	// Kafka's names, for DescribeConfigs of the broker.
	BrokerID       int32
	BrokerSettings []BrokerSetting
	// TLS, when set, makes every connection TLS; the configuration must
	// require and verify a client certificate, and Principal names the
	// principal of a verified one. Without TLS every connection is
	// Anonymous.
	TLS       *tls.Config
	Principal func(*x509.Certificate) string
	Anonymous string
	// FetchSessions is how many incremental fetch sessions the listener
	// keeps (0: DefaultFetchSessions; negative: none).
	FetchSessions int
	// SASL makes a connection without a client certificate log in with
	// SASL PLAIN before anything but ApiVersions, SaslHandshake and
	// SaslAuthenticate (sasl.go); Login checks a user name and password
	// and returns the principal.
	SASL  bool
	Login func(user, password string) (principal string, ok bool)
	// FailedLoginDelay and MaxFailedLoginDelay set how a source's refused
	// logins are slowed (sasl.go); zero: 1 s and 10 s.
	FailedLoginDelay, MaxFailedLoginDelay time.Duration
	// Scram, when set, offers SCRAM-SHA-256 and SCRAM-SHA-512 too: it
	// returns a user's password credential of a mechanism. PLAIN is
	// offered only when Login is set.
	Scram func(user string, mechanism int32) (*messages.ScramCredential, bool)
	// OAuth, when set, offers OAUTHBEARER too: it checks a token and
	// returns its principal and when it expires.
	OAuth func(token string) (principal string, expires time.Time, err error)
	// SessionLifetime, when positive, ends a SASL login's session that
	// long after it (Kafka's connections.max.reauth.ms, KIP-368): the
	// client must log in again on the connection before then, or the
	// connection is closed at its next request. A password removed or
	// changed so stops working on open connections too.
	SessionLifetime time.Duration
	// Quotas returns the cluster's client quotas now (nil: none), which
	// the listener enforces on produced and fetched bytes (quotas.go).
	Quotas func() *acl.Quotas
	// DynamicConfigs returns the dynamic broker settings in force for this
	// broker (nil: none yet): connections.max.reauth.ms overrides
	// SessionLifetime, max.connections and max.connections.per.ip the
	// limits for new connections, and DescribeConfigs shows them.
	DynamicConfigs func() *brokerconfig.Values
	Logger         *slog.Logger
	// Metrics counts the requests served, by API (nil: not counted).
	Metrics *metrics.Broker
}

func (c *Config) defaults() {
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = 100 << 20
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 10_000
	}
	if c.MaxConnectionsPerIP <= 0 {
		c.MaxConnectionsPerIP = 1_000
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Minute
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 256
	}
	if c.MaxPendingPerIP <= 0 {
		c.MaxPendingPerIP = 32
	}
	if c.FirstRequestTimeout <= 0 {
		c.FirstRequestTimeout = 10 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 64
	}
	if c.Budget == nil {
		c.Budget = budget.New(DefaultBudgetBytes, DefaultBudgetBytes/4)
	}
	if c.FrameTimeout <= 0 {
		c.FrameTimeout = 30 * time.Second
	}
	if c.MaxRequestEntries <= 0 {
		c.MaxRequestEntries = DefaultMaxRequestEntries
	}
	if c.MaxFetchBytes <= 0 {
		c.MaxFetchBytes = 8 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Anonymous == "" {
		c.Anonymous = "User:ANONYMOUS"
	}
}

// DefaultBudgetBytes is the in-flight byte budget of a listener given
// none.
const DefaultBudgetBytes = 64 << 20

// Server is a Kafka protocol listener.
type Server struct {
	cfg Config
	// stopped ends when Close is called: connections waiting for the
	// budget stop waiting.
	stopped context.Context
	stop    context.CancelFunc

	mu           sync.Mutex
	ln           net.Listener
	conns        map[*conn]struct{} // pending and established
	perIP        map[string]int     // established connections by address
	pending      int
	pendingPerIP map[string]int
	closed       bool
	wg           sync.WaitGroup

	// Refused counts connections closed at once by a limit.
	Refused atomic.Int64
	spaced  sync.Map // by message: *logspace.Every
	// failedLogins slows SASL guessing down per source address (sasl.go).
	failedLogins loginFailures
	// scramSecret makes the salts shown for users without a password.
	scramSecret []byte
	// quotaBuckets count clients' bytes against their quotas.
	quotaBuckets quotaBuckets
	// fetchSessions are the incremental fetch sessions (fetch_session.go).
	fetchSessions fetchSessions
}

// NewServer returns a listener with cfg; Serve starts it.
func NewServer(cfg Config) *Server {
	cfg.defaults()
	stopped, stop := context.WithCancel(context.Background())
	sessions := cfg.FetchSessions
	if sessions == 0 {
		sessions = DefaultFetchSessions
	}
	secret := make([]byte, 32)
	rand.Read(secret) // never fails (crypto/rand panics rather)
	return &Server{cfg: cfg, stopped: stopped, stop: stop, conns: map[*conn]struct{}{}, perIP: map[string]int{},
		pendingPerIP: map[string]int{}, fetchSessions: fetchSessions{max: sessions}, scramSecret: secret,
		failedLogins: loginFailures{step: cfg.FailedLoginDelay, most: cfg.MaxFailedLoginDelay}}
}

// Open is how many connections the listener holds now.
func (s *Server) Open() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.conns))
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	s.ln = ln
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.admit(nc)
	}
}

// admit starts serving nc as a pending connection, or closes it at once
// when the pending connections are at a limit.
func (s *Server) admit(nc net.Conn) {
	ip := remoteIP(nc)
	s.mu.Lock()
	why := ""
	switch {
	case s.closed:
		why = "listener closing"
	case s.pending >= s.cfg.MaxPending:
		why = fmt.Sprintf("%d connections have not sent their first request yet, the most allowed", s.pending)
	case s.pendingPerIP[ip] >= s.cfg.MaxPendingPerIP:
		why = fmt.Sprintf("%d connections from %s have not sent their first request yet, the most allowed from one address", s.pendingPerIP[ip], ip)
	}
	if why != "" {
		s.mu.Unlock()
		s.Refused.Add(1) // counted before the peer can see the close
		nc.Close()
		s.logSpaced("kafka listener refused a connection", "remote", nc.RemoteAddr().String(), "reason", why)
		return
	}
	c := &conn{srv: s, nc: nc, ip: ip, caller: Caller{Principal: s.cfg.Anonymous, Peer: "kafka " + nc.RemoteAddr().String()}}
	s.conns[c] = struct{}{}
	s.pending++
	s.pendingPerIP[ip]++
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		if c.established {
			if s.perIP[ip]--; s.perIP[ip] <= 0 {
				delete(s.perIP, ip)
			}
		} else {
			s.unpend(ip)
		}
		s.mu.Unlock()
	}()
}

// unpend forgets a pending connection of ip; the caller holds mu.
func (s *Server) unpend(ip string) {
	s.pending--
	if s.pendingPerIP[ip]--; s.pendingPerIP[ip] <= 0 {
		delete(s.pendingPerIP, ip)
	}
}

// establish turns c, whose first request has arrived, into an established
// connection, or says which limit refuses it.
func (s *Server) establish(c *conn) string {
	most, mostPerIP, overrides := s.cfg.MaxConnections, s.cfg.MaxConnectionsPerIP, s.cfg.MaxConnectionsPerIPOverrides
	if v := s.dynamicConfigs(); v != nil {
		most, mostPerIP = v.Int(brokerconfig.MaxConnections, most), v.Int(brokerconfig.MaxConnectionsPerIP, mostPerIP)
		if list, ok := v.Get(brokerconfig.MaxConnectionsPerIPOverrides); ok {
			overrides, _ = brokerconfig.ParseIPOverrides(list) // checked when set
		}
	}
	if n, ok := overrides[c.ip]; ok {
		mostPerIP = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	established := len(s.conns) - s.pending
	switch {
	case established >= most:
		return fmt.Sprintf("%d connections open, the most allowed", established)
	case s.perIP[c.ip] >= mostPerIP:
		return fmt.Sprintf("%d connections from %s, the most allowed from one address", s.perIP[c.ip], c.ip)
	}
	s.unpend(c.ip)
	s.perIP[c.ip]++
	c.established = true
	return ""
}

// logSpaced logs at most one line a second of each message, so a flood
// cannot flood the log, nor hide refusals of another kind.
func (s *Server) logSpaced(msg string, args ...any) {
	if e, _ := s.spaced.LoadOrStore(msg, new(logspace.Every)); e.(*logspace.Every).Allow() {
		s.cfg.Logger.Warn(msg, args...)
	}
}

// Close stops accepting, closes every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.stop()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func remoteIP(nc net.Conn) string {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// conn is one client connection.
type conn struct {
	srv         *Server
	nc          net.Conn
	ip          string
	caller      Caller
	established bool // its first request has arrived (only its serving goroutine uses it)
	// loggedIn is set once the connection has its principal (from its
	// certificate, or a SASL login); mechanism is the one its SASL
	// handshake chose ("": none yet), failedLogin set when a login was
	// refused (the connection ends after the answer). Only the serving
	// goroutine uses them.
	loggedIn    bool
	mechanism   string
	scram       *scramLogin // the SCRAM conversation, when mechanism is SCRAM
	failedLogin bool
	// relogin is set while a logged-in connection logs in again;
	// sessionEnds is when its SASL session ends (zero: never).
	relogin     bool
	sessionEnds time.Time
	// mutedUntil (Unix nanoseconds) is when a client over its quota may
	// send its next request: the reader waits until then.
	mutedUntil atomic.Int64
}

// handshake runs the TLS handshake of a connection and takes its
// principal from the client's certificate.
func (c *conn) handshake() error {
	tc := tls.Server(c.nc, c.srv.cfg.TLS)
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.FirstRequestTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 && c.srv.cfg.SASL {
		c.nc = tc // it logs in with SASL
		return nil
	}
	if len(certs) == 0 || c.srv.cfg.Principal == nil || c.srv.cfg.Principal(certs[0]) == "" {
		return errors.New("no principal in the client certificate")
	}
	c.nc, c.caller.Principal, c.loggedIn = tc, c.srv.cfg.Principal(certs[0]), true
	return nil
}

// serve reads requests until the connection ends. Each request is served
// on its own goroutine; answers are written in request order.
func (c *conn) serve() {
	defer func() { c.nc.Close() }()
	if c.srv.cfg.TLS != nil {
		if err := c.handshake(); err != nil {
			c.srv.Refused.Add(1)
			c.srv.logSpaced("kafka listener refused a TLS connection", "remote", c.nc.RemoteAddr().String(), "error", err.Error())
			return
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each request gets a slot in this queue, in arrival order; the
	// writer takes the slots in turn and waits for each one's answer.
	queue := make(chan chan answer, c.srv.cfg.MaxInFlight)
	writerDone := make(chan struct{})
	go c.write(queue, writerDone)
	defer func() {
		close(queue)
		<-writerDone
	}()
	// The first request must come soon after the connection (and its
	// handshake): until it has, the connection is pending.
	firstBy := time.Now().Add(c.srv.cfg.FirstRequestTimeout)
	for {
		if !c.waitMuted() {
			return
		}
		frame, held, err := c.readFrame(firstBy)
		if err == nil && !c.established {
			if why := c.srv.establish(c); why != "" {
				c.release(held)
				c.srv.Refused.Add(1)
				c.srv.logSpaced("kafka listener refused a connection", "remote", c.nc.RemoteAddr().String(), "reason", why)
				return
			}
		}
		if err != nil {
			var ne net.Error
			if !c.established && errors.As(err, &ne) && ne.Timeout() {
				c.srv.logSpaced("kafka listener closed a connection that sent no request in time", "remote", c.nc.RemoteAddr().String(),
					"timeout", c.srv.cfg.FirstRequestTimeout)
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) {
				c.srv.logSpaced("kafka connection closed", "remote", c.nc.RemoteAddr().String(), "reason", err.Error())
			}
			return
		}
		// A throttle given while the frame was read holds it too.
		if !c.waitMuted() {
			c.release(held)
			return
		}
		h, body, err := parseHeader(frame)
		if err != nil {
			c.release(held)
			c.srv.logSpaced("kafka connection closed: malformed request header", "remote", c.nc.RemoteAddr().String(), "error", err.Error())
			return
		}
		a, known := apis[h.key]
		if !known || h.version < a.versions.min || h.version > a.versions.max {
			if h.key == kmsg.ApiVersions.Int16() {
				// Clients probe with their newest ApiVersions: answer v0
				// with the versions served so they can pick one.
				slot := make(chan answer, 1)
				slot <- c.answer(held, encodeResponse(h.correlationID, unsupportedApiVersions()))
				queue <- slot
				continue
			}
			c.release(held)
			c.srv.logSpaced("kafka connection closed: unsupported request", "remote", c.nc.RemoteAddr().String(),
				"api", kmsg.NameForKey(h.key), "key", h.key, "version", h.version)
			return
		}
		if !c.sessionEnds.IsZero() && !beforeLogin[h.key] && time.Now().After(c.sessionEnds) {
			c.release(held)
			c.srv.logSpaced("kafka connection closed: its SASL session ended without a login again", "remote", c.nc.RemoteAddr().String(),
				"principal", c.caller.Principal, "api", kmsg.NameForKey(h.key))
			return
		}
		if c.srv.cfg.SASL && !c.loggedIn && !beforeLogin[h.key] {
			c.release(held)
			c.srv.Refused.Add(1)
			c.srv.logSpaced("kafka connection closed: a request before the SASL login", "remote", c.nc.RemoteAddr().String(),
				"api", kmsg.NameForKey(h.key))
			return
		}
		req, err := decodeRequest(h, body)
		if err != nil {
			c.release(held)
			c.srv.logSpaced("kafka connection closed: malformed request", "remote", c.nc.RemoteAddr().String(), "error", err.Error())
			return
		}
		n := entries(req)
		if n > c.srv.cfg.MaxRequestEntries {
			c.release(held)
			c.srv.Refused.Add(1)
			c.srv.logSpaced("kafka connection closed: too many entries in one request", "remote", c.nc.RemoteAddr().String(),
				"principal", c.caller.Principal, "api", kmsg.NameForKey(h.key), "entries", n, "limit", c.srv.cfg.MaxRequestEntries)
			return
		}
		// Each entry's ask of the broker holds memory until answered.
		c.srv.cfg.Budget.Take(c.ip, int64(n*askBytes))
		held += int64(n * askBytes)
		slot := make(chan answer, 1)
		queue <- slot
		// The handler's first part runs here, in arrival order; what it
		// returns waits for the broker on its own goroutine.
		arrived := time.Now()
		finish := a.handle(&request{conn: c, ctx: ctx}, h, req)
		go func() {
			resp := finish()
			c.enforceQuota(h, req, resp)
			code := responseError(resp)
			c.srv.cfg.Metrics.KafkaRequest(kmsg.NameForKey(h.key), code, time.Since(arrived))
			if refusals[code] {
				c.srv.logSpaced("kafka request refused", "principal", c.caller.Principal, "remote", c.nc.RemoteAddr().String(),
					"api", kmsg.NameForKey(h.key), "error", messages.ErrorCode(code).String(), "reason", responseMessage(resp))
			}
			if resp == nil {
				slot <- c.answer(held, nil)
				return
			}
			resp.SetVersion(h.version)
			slot <- c.answer(held, encodeResponse(h.correlationID, resp))
		}()
		if c.failedLogin {
			return // after the refusal is written
		}
	}
}

// readFrame reads the connection's next frame within the budget: the
// size first (the connection may be idle until it comes), then it waits
// until the budget has room for the frame, then the body must follow
// within the frame timeout. The frame's bytes stay counted until its
// answer is written (held is how many).
func (c *conn) readFrame(firstBy time.Time) (frame []byte, held int64, err error) {
	deadline := time.Now().Add(c.srv.cfg.IdleTimeout)
	if !c.established {
		deadline = firstBy
	}
	if err := c.nc.SetReadDeadline(deadline); err != nil {
		return nil, 0, err
	}
	limit := c.srv.cfg.MaxFrameBytes
	if c.srv.cfg.SASL && !c.loggedIn {
		limit = min(limit, maxLoginFrameBytes) // a stranger's frames stay small
	}
	n, err := readSize(c.nc, limit)
	if err != nil {
		return nil, 0, err
	}
	if err := c.srv.cfg.Budget.Acquire(c.srv.stopped, c.ip, int64(n)); err != nil {
		return nil, 0, err
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.FrameTimeout)); err != nil {
		c.release(int64(n))
		return nil, 0, err
	}
	frame, err = readBody(c.nc, n)
	if err != nil {
		c.release(int64(n))
		return nil, 0, err
	}
	return frame, int64(n), nil
}

// answer is a response ready to write and the bytes its request and it
// hold in the budget until it is written.
type answer struct {
	bytes []byte
	held  int64
}

// answer counts the response's bytes too: they are in memory until
// written.
func (c *conn) answer(held int64, b []byte) answer {
	c.srv.cfg.Budget.Take(c.ip, int64(len(b)))
	return answer{bytes: b, held: held + int64(len(b))}
}

func (c *conn) release(n int64) { c.srv.cfg.Budget.Release(c.ip, n) }

// responseError is the first error code of a response: its own, else the
// first of a topic, partition or other entry, so that a request refused
// for one partition is counted under that error (0: none; nil: an acks=0
// produce).
// responseMessage is the top-level error message of a response, if it
// has one.
func responseMessage(resp kmsg.Response) string {
	if resp == nil {
		return ""
	}
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorMessage")
	if f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String {
		return f.Elem().String()
	}
	return ""
}

func responseError(resp kmsg.Response) int16 {
	if resp == nil {
		return 0
	}
	return firstErrorCode(reflect.ValueOf(resp).Elem())
}

func firstErrorCode(v reflect.Value) int16 {
	switch v.Kind() {
	case reflect.Struct:
		if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 && f.Int() != 0 {
			return int16(f.Int())
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Slice || f.Kind() == reflect.Struct {
				if code := firstErrorCode(f); code != 0 {
					return code
				}
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return 0 // bytes, names
		}
		for i := range v.Len() {
			if code := firstErrorCode(v.Index(i)); code != 0 {
				return code
			}
		}
	}
	return 0
}

// refusals are the error codes of requests refused to their sender (an
// ACL, a limit), each logged with who asked.
var refusals = map[int16]bool{
	int16(messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED):   true,
	int16(messages.ErrorCode_GROUP_AUTHORIZATION_FAILED):   true,
	int16(messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED): true,
	int16(messages.ErrorCode_OFFSET_METADATA_TOO_LARGE):    true,
	int16(messages.ErrorCode_RECORD_TOO_LARGE):             true,
	int16(messages.ErrorCode_INVALID_REQUEST):              true,
}

// write sends each slot's answer in turn (a nil answer sends nothing) and
// then releases what it held in the budget.
func (c *conn) write(queue <-chan chan answer, done chan<- struct{}) {
	defer close(done)
	failed := false
	for slot := range queue {
		a := <-slot
		if a.bytes != nil && !failed {
			if _, err := c.nc.Write(a.bytes); err != nil {
				failed = true
				c.nc.Close() // the reader stops too
			}
		}
		c.release(a.held)
	}
}

// BrokerSetting is one broker setting, read at start: its Kafka name, its
// value in Kafka's units, and whether it was set (else it is the default).
type BrokerSetting struct {
	Name, Value string
	Set         bool
}

// dynamicConfigs is the dynamic broker settings in force (nil: none).
func (s *Server) dynamicConfigs() *brokerconfig.Values {
	if s.cfg.DynamicConfigs == nil {
		return nil
	}
	return s.cfg.DynamicConfigs()
}

// sessionLifetime is how long a SASL login lasts now: the dynamic
// connections.max.reauth.ms, else SessionLifetime.
func (s *Server) sessionLifetime() time.Duration {
	if v := s.dynamicConfigs(); v != nil {
		if ms := v.Int(brokerconfig.ConnectionsMaxReauthMs, -1); ms >= 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return s.cfg.SessionLifetime
}
