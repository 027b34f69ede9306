package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/sluicemq/sluice/internal/budget"
)

// MaxFrameBytes bounds one gRPC message a node sends, which carries one
// actor message (endpointBatchSize). What it accepts is bounded by its
// MaxMessageBytes: a peer that declares a larger frame is refused before
// the frame is read into memory.
const MaxFrameBytes = 256 << 20

// frameOverhead is what the envelope adds to an actor message: its type
// name, target and sender PIDs and headers.
const frameOverhead = 64 << 10

// HTTP/2 flow-control window and socket buffer sizes of every connection.
const (
	windowBytes = 64 << 20
	// serverWindowBytes is what a peer may send a connection of this
	// node's listener before it is read: held in memory while the guard
	// waits for the in-flight budget, so smaller than a dialer's window.
	serverWindowBytes     = 16 << 20
	bufferBytes           = 1 << 20
	serverReadBufferBytes = 256 << 10
)

// Config says where a node listens and how large its messages get.
type Config struct {
	// Host and Port to listen on; Port 0 picks a free port.
	Host string
	Port int
	// AdvertisedAddr, when set, is the host:port peers use to reach this node.
	AdvertisedAddr string
	// MaxMessageBytes is the largest single message this node sends or
	// accepts (a produce request or fetch response). Default 8 MiB.
	MaxMessageBytes int
	// MaxConnections and MaxConnectionsPerIP bound the connections the
	// listener holds, in all and from one remote address; IdleTimeout
	// closes a connection that sends nothing (not even a keepalive ping)
	// for that long. Zero: the defaults.
	MaxConnections      int
	MaxConnectionsPerIP int
	IdleTimeout         time.Duration
	// MaxConnectionsPerIPOverrides are other limits for some addresses
	// (canonical IP strings), as Kafka's max.connections.per.ip.overrides.
	MaxConnectionsPerIPOverrides map[string]int
	// Limits, when set, returns the connection limits in force now (the
	// dynamic max.connections and friends), read at each new connection.
	Limits func() ConnLimits
	// LogLevel for protoactor's own logging. Default: silent, since it
	// reports every closed connection (a client going away) as an error.
	LogLevel *slog.Level
	// Security turns on mutual TLS; nil: plaintext.
	Security *Security
	// AcceptWatches lets other nodes watch this node's actors: a client
	// node needs it (a broker watches its push subscribers); a broker's
	// actors are watched by no other node, and refuse it.
	AcceptWatches bool
	// Budget, when set, counts the produce requests a peer sends without
	// a sender to answer (acks=0) from their arrival until the partition
	// has taken them; the stream reads on only when the budget has room
	// for the next one (see guard.go, holdUntilTaken).
	Budget *budget.Budget
	// System, when set, is the caller's actor system (without a remote of
	// its own) that the node adds its remote endpoint to; Stop then leaves
	// it running. Nil: the node makes a system of its own.
	System *actor.ActorSystem
}

// Node is a running actor system with its remote endpoint.
type Node struct {
	System *actor.ActorSystem
	// serving: client sessions are served (ServeSessions).
	serving *atomic.Bool
	Remote  *remote.Remote
	// Addr is the address peers reach this node at.
	Addr string
	// Guard counts what the stream guard refused from other processes.
	Guard *GuardStats
	// Conns counts the listener's connections and what its limits refused.
	Conns *ConnStats

	tls         *tlsState
	dialOptions []grpc.DialOption

	// sessions are the client sessions this node opened, by broker
	// address (session_client.go).
	sessionsMu sync.Mutex
	sessions   map[string]*clientSession
	// noSessions are the brokers that do not serve sessions.
	noSessions map[string]bool
	// routes are the stand-ins for brokers' actors that subscribers answer
	// (session_client.go), by PID.
	routes     map[string]*actor.PID
	sessionSeq uint64
	// callersSystem: the system is the caller's (Config.System); Stop
	// leaves it running.
	callersSystem bool
}

// Secure reports whether the node runs with TLS.
func (n *Node) Secure() bool { return n.tls != nil }

// LocalPrincipal is the principal of the node's own certificate ("" without
// TLS or for a token client).
func (n *Node) LocalPrincipal() string {
	if n.tls == nil {
		return ""
	}
	return n.tls.LocalPrincipal()
}

// ServerTLS returns a TLS configuration for another listener of this node
// (the Kafka listener): the node's own certificate, kept current as it is
// reloaded, and a client certificate the cluster's CA signed, naming a
// principal (CertPrincipal of the verified chain's leaf). Nil without TLS.
func (n *Node) ServerTLS() *tls.Config { return n.serverTLS(false) }

// SASLServerTLS is ServerTLS for a listener that also takes SASL logins:
// a client certificate is optional, and checked as ServerTLS does when
// one is given.
func (n *Node) SASLServerTLS() *tls.Config { return n.serverTLS(true) }

func (n *Node) serverTLS(certOptional bool) *tls.Config {
	if n.tls == nil {
		return nil
	}
	s := n.tls
	auth := tls.RequireAnyClientCert
	if certOptional {
		auth = tls.RequestClientCert
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.ownCertificate(), nil },
		// Verified here rather than by crypto/tls, so that a reloaded CA
		// applies to new connections at once.
		ClientAuth: auth,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 && certOptional {
				return nil
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("a client certificate is required")
			}
			if err := s.verifyChain(cs.PeerCertificates, x509.ExtKeyUsageClientAuth); err != nil {
				return fmt.Errorf("certificate of %q not accepted: %w", cs.PeerCertificates[0].Subject.CommonName, err)
			}
			if CertPrincipal(cs.PeerCertificates[0]) == "" {
				return errors.New("the certificate names no principal")
			}
			return nil
		},
	}
}

// ReloadTLS reads the certificate, key and CA files again (they are also
// checked for changes every few seconds). New connections use them; open
// ones keep the certificates they were made with.
func (n *Node) ReloadTLS() error {
	if n.tls == nil {
		return nil
	}
	return n.tls.Reload()
}

// ParseAddr splits "host:port" for Config.
func ParseAddr(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: bad port", addr)
	}
	return host, port, nil
}

// NewSystem creates an actor system that logs through logger.
func NewSystem(logger *slog.Logger, level slog.Level) *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(system *actor.ActorSystem) *slog.Logger {
		return slog.New(levelHandler{level: level, Handler: logger.Handler()}).With("lib", "protoactor")
	}))
}

// endpointBatchSize is how many messages the remote packs into one gRPC
// message: one. The receiver decodes a whole gRPC message before it
// delivers any of it, so a batch of multi-MiB produce requests would make
// the first wait for the last; one message per gRPC message lets a broker
// work on a request while the next is still in transit (about 10% more
// produce throughput with 1 MiB requests on 2 cores). Sluice's messages
// are few and large (records travel in batches), so per-message framing
// costs little.
const endpointBatchSize = 1

// Start creates an actor system and starts its remote endpoint.
func Start(cfg Config, logger *slog.Logger) (node *Node, err error) {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 8 << 20
	}
	if cfg.MaxMessageBytes > MaxFrameBytes-(64<<10) {
		return nil, fmt.Errorf("max message bytes %d exceeds the transport limit %d", cfg.MaxMessageBytes, MaxFrameBytes-(64<<10))
	}
	level := slog.LevelError + 4
	if cfg.LogLevel != nil {
		level = *cfg.LogLevel
	}
	system := cfg.System
	if system == nil {
		system = NewSystem(logger, level)
	}
	watches := &remoteWatches{m: map[string]map[string]int{}}
	system.Extensions.Register(watches)
	g := &guard{logger: logger, stats: &GuardStats{}, acceptWatches: cfg.AcceptWatches, watches: watches, budget: cfg.Budget, system: system}
	creds := insecure.NewCredentials()
	if cfg.Security != nil {
		if g.tls, err = newTLSState(*cfg.Security, logger); err != nil {
			return nil, err
		}
		creds = g.tls.credentials()
	}
	limiter := newConnLimiter(creds, cfg, g.stats, logger)
	g.closeConn = limiter.closeConn
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxFrameBytes), grpc.MaxCallSendMsgSize(MaxFrameBytes)),
		grpc.WithInitialWindowSize(windowBytes),
		grpc.WithInitialConnWindowSize(windowBytes),
		grpc.WithReadBufferSize(bufferBytes),
		grpc.WithWriteBufferSize(bufferBytes),
		grpc.WithRecvBufferPool(grpc.NewSharedBufferPool()),
		// Notice a dead or paused peer within seconds, so that requests to it
		// fail fast instead of queueing behind a stuck stream.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 5 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
	}
	if cfg.Security != nil && cfg.Security.Token != "" {
		// Only a client dials with a token, and only to peers that proved
		// to be brokers of the cluster (tlsState.checkServer).
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(tokenCreds{token: cfg.Security.Token}))
	}
	serving := &atomic.Bool{}
	opts := []remote.ConfigOption{
		remote.WithEndpointWriterBatchSize(endpointBatchSize),
		// The writer's queue starts this small and doubles when full; the
		// default preallocates a million slots (16 MiB of pointers) per
		// peer, which every garbage collection then scans.
		remote.WithEndpointWriterQueueSize(1024),
		// Both option lists replace protoactor's defaults, which hold an
		// insecure credential: the credentials are set here, always.
		remote.WithServerOptions(
			grpc.Creds(limiter),
			grpc.ConnectionTimeout(handshakeTimeout),
			grpc.MaxConcurrentStreams(maxStreamsPerConn),
			grpc.MaxRecvMsgSize(cfg.MaxMessageBytes+frameOverhead),
			grpc.MaxSendMsgSize(MaxFrameBytes),
			// One stream carries every message between two nodes; a
			// static flow-control window of several MiB keeps multi-MiB
			// batches flowing without waiting for window updates, and
			// bounds what a peer can make a stream hold unread.
			grpc.InitialWindowSize(serverWindowBytes),
			grpc.InitialConnWindowSize(serverWindowBytes),
			// Every accepted connection holds its read buffer from the
			// start: a smaller one than the dialer's keeps a crowd of idle
			// connections cheap, and the write buffer is released after
			// each flush.
			grpc.ReadBufferSize(serverReadBufferBytes),
			grpc.WriteBufferSize(bufferBytes),
			grpc.SharedWriteBuffer(true),
			grpc.RecvBufferPool(grpc.NewSharedBufferPool()),
			// Protobuf, except that a session's answers, marshalled once
			// into their RemoteMessage (encode.go), go as they are.
			grpc.ForceServerCodec(rawCodec{}),
			grpc.StreamInterceptor(g.stream),
			// Client sessions (session.go) on the same listener.
			grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
				if method, _ := grpc.MethodFromServerStream(ss); method != SessionMethod {
					return errNotSession(method)
				}
				if !serving.Load() {
					// Until ServeSessions, the actors a session's requests go
					// to may not be running: protoactor must not be handed a
					// message for an actor it is still spawning.
					return status.Error(codes.Unavailable, "the broker is starting")
				}
				return serveSession(system, ss)
			}),
			grpc.UnaryInterceptor(g.unary),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		),
		remote.WithDialOptions(dialOpts...),
	}
	if cfg.AdvertisedAddr != "" {
		opts = append(opts, remote.WithAdvertisedHost(cfg.AdvertisedAddr))
	}
	rcfg := remote.Configure(cfg.Host, cfg.Port, opts...)
	// A failed connection attempt blocks the endpoint writer for 2 s per
	// retry; with one attempt, messages to a dead peer fail fast.
	rcfg.MaxRetryCount = 1
	r := remote.NewRemote(system, rcfg)
	// remote.Start panics when it cannot listen; report that as an error.
	defer func() {
		if p := recover(); p != nil {
			if g.tls != nil {
				g.tls.close()
			}
			node, err = nil, fmt.Errorf("transport: %v", p)
		}
	}()
	r.Start()
	addr := system.Address()
	g.local.Store(&addr)
	return &Node{System: system, Remote: r, Addr: system.Address(), Guard: g.stats, Conns: limiter.stats, tls: g.tls, dialOptions: dialOpts,
		serving: serving, callersSystem: cfg.System != nil}, nil
}

// ServeSessions starts serving client sessions (session.go), once the
// actors their requests go to run; until then they are refused as
// Unavailable and the client tries again.
func (n *Node) ServeSessions() { n.serving.Store(true) }

// Stop shuts the remote endpoint down, and the actor system unless it is
// the caller's (Config.System).
func (n *Node) Stop() {
	n.sessionsMu.Lock()
	sessions := make([]*clientSession, 0, len(n.sessions))
	for _, s := range n.sessions {
		sessions = append(sessions, s)
	}
	n.sessionsMu.Unlock()
	for _, s := range sessions {
		s.end()
	}
	n.Remote.Shutdown(true)
	if !n.callersSystem {
		n.System.Shutdown()
	}
	if n.tls != nil {
		n.tls.close()
	}
}

// Probe connects to the node at addr as this node's remote would and says
// why that fails: an error wrapping ErrAuthentication when the TLS
// handshake or the token was refused (either way), another error when addr
// cannot be reached, nil when the peer would accept this node's messages.
// Clients call it to explain a broker that does not answer.
func (n *Node) Probe(ctx context.Context, addr string) error {
	if n.tls != nil {
		if err := n.tls.probeHandshake(ctx, addr); err != nil {
			return err
		}
	} else if err := greetPlaintext(ctx, addr); err != nil {
		return err
	}
	conn, err := grpc.DialContext(ctx, addr, n.dialOptions...)
	if err != nil {
		return err
	}
	defer conn.Close()
	err = conn.Invoke(ctx, "/remote.Remoting/ListProcesses", &remote.ListProcessesRequest{}, &remote.ListProcessesResponse{})
	st, _ := status.FromError(err)
	switch {
	case st.Code() == codes.Unimplemented:
		return nil // served up to the guard: authenticated
	case st.Code() == codes.Unauthenticated:
		return fmt.Errorf("%w: %s refused this client: %s", ErrAuthentication, addr, st.Message())
	case st.Code() == codes.Unavailable && n.tls != nil && isHandshakeFailure(st.Message()):
		return fmt.Errorf("%w: TLS with %s failed: %s", ErrAuthentication, addr, st.Message())
	case st.Code() == codes.DeadlineExceeded:
		return fmt.Errorf("%w from %s: a paused or overloaded broker, or not a Sluice broker", ErrNoAnswer, addr)
	case st.Code() == codes.Unavailable && n.tls == nil && strings.Contains(st.Message(), "server preface"):
		// A TLS listener closes a plaintext connection at once.
		return fmt.Errorf("%w: %s closed the connection before speaking gRPC: it requires TLS (give the cluster's CA and a certificate or token), or it is not a Sluice broker", ErrAuthentication, addr)
	}
	return fmt.Errorf("%s: %s", addr, st.Message())
}

// isHandshakeFailure reports whether a gRPC connection error was the TLS
// handshake's (this side's check of the peer, or the peer's alert about
// this side's certificate).
func isHandshakeFailure(msg string) bool {
	for _, s := range []string{"handshake", "tls:", "certificate", "first record does not look like a TLS handshake"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// levelHandler filters records below level.
type levelHandler struct {
	level slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{level: h.level, Handler: h.Handler.WithAttrs(attrs)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{level: h.level, Handler: h.Handler.WithGroup(name)}
}
