// Package server runs a Sluice broker inside a Go program: the actor
// listener and its transport, the cluster backend (embedded or Consul),
// the broker's actors, and optionally the Kafka listener and the HTTP
// listener with metrics, probes and the console. `sluice broker` is flags
// turned into a Config and handed to New; a program or a test can do the
// same.
//
//	srv, err := server.New(server.Config{Broker: cfg, Addr: "127.0.0.1:0"})
//	if err != nil { ... }
//	if err := srv.Start(ctx); err != nil { ... }
//	defer srv.Close()
//	admin, _ := client.NewAdmin(srv.Addr(), client.WithActorSystem(srv.System()))
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/broker"
	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/cluster/consul"
	"github.com/sluicemq/sluice/console"
	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/kafka"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/metrics"
	"github.com/sluicemq/sluice/storage/datadir"
	"github.com/sluicemq/sluice/transport"
)

// Config is a broker's whole configuration. Broker holds what the broker's
// actors use (id, data directory, topic defaults, group settings); the
// rest says where it listens and how it finds its cluster.
type Config struct {
	Broker actors.BrokerConfig

	// Addr is the host:port of the actor listener (port 0: a free one);
	// Advertise the one other brokers and clients reach it at (default:
	// Addr as bound).
	Addr, Advertise string
	// Consul is the Consul agent's host:port, to join the cluster named
	// Cluster with health checks of CheckTTL; "" runs the embedded
	// single-node backend kept in the data directory.
	Consul, Cluster string
	CheckTTL        time.Duration

	// KafkaAddr opens a Kafka protocol listener at host:port ("" off);
	// KafkaAdvertise is the address Kafka clients reach it at.
	KafkaAddr, KafkaAdvertise string

	// HTTPAddr opens the HTTP listener (metrics, probes, profiles, the
	// console): host:port, HTTPAuto (127.0.0.1 at the broker's port +
	// 1000) or "" (off).
	HTTPAddr string
	// HTTPAnonymous serves metrics, probes and profiles to clients
	// without a certificate when TLS is on.
	HTTPAnonymous bool
	// HTTPHosts are host names the HTTP listener answers to besides its
	// own addresses, localhost and the machine's name.
	HTTPHosts []string
	// ConsoleWrite lets the console create and delete topics and reset
	// group offsets.
	ConsoleWrite bool
	// PartitionMetrics exports per-partition series.
	PartitionMetrics bool
	// KafkaSASL makes the Kafka listener take SASL logins (SASL_SSL) from
	// clients without a certificate: SCRAM with users' passwords, PLAIN
	// with their tokens; it needs TLS. KafkaSASLPlaintext makes the
	// listener plaintext, every connection logging in with SCRAM
	// (SASL_PLAINTEXT): PLAIN is not offered, as it would send a token,
	// which works on every listener, in clear. KafkaSessionLifetime ends
	// each login's session that long after it (KIP-368; 0: never).
	KafkaSASL            bool
	KafkaSASLPlaintext   bool
	KafkaSessionLifetime time.Duration
	// KafkaOAuthJWKS, when set, makes the SASL listener take OAUTHBEARER
	// logins with JWTs signed by a key of this JWKS file (and, when set,
	// of issuer KafkaOAuthIssuer for audience KafkaOAuthAudience).
	KafkaOAuthJWKS, KafkaOAuthIssuer, KafkaOAuthAudience string
	// KafkaSettings are the broker's settings under Kafka's names, which
	// the Kafka listener's DescribeConfigs of the broker lists.
	KafkaSettings []kafka.BrokerSetting

	// Connection limits of the actor and Kafka listeners (0: the
	// transport's defaults), and the bytes of requests and answers all
	// listeners hold at once (0: kafka.DefaultBudgetBytes).
	MaxConnections, MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides gives some addresses limits of their
	// own (brokerconfig.ParseIPOverrides).
	MaxConnectionsPerIPOverrides map[string]int
	IdleTimeout                  time.Duration
	MaxInflightBytes             int64

	// TLSCert, TLSKey and TLSCA turn on mutual TLS, principals and ACLs
	// (all three or none).
	TLSCert, TLSKey, TLSCA string

	// Build names the running build, as brokers report it.
	Build Build
	// Logger gets the broker's log (default: discarded); DebugTransport
	// logs the transport at debug level too.
	Logger         *slog.Logger
	DebugTransport bool
	// ClientLogger gets the log of the console's client (default:
	// discarded).
	ClientLogger *slog.Logger

	// System, when set, is the program's own actor system (made with
	// actor.NewActorSystem, without a remote): the broker's actors and
	// the actor listener join it, so the program's actors run beside the
	// broker's and reach it, and are reached, at Addr. Spawn them after
	// Start, when the system has its address. Close leaves the system
	// running. Nil: the broker makes a system of its own.
	System *actor.ActorSystem
}

// Build is what a broker reports of the build it runs.
type Build struct {
	Version, Commit, GoVersion string
	// Short is the version and commit as other brokers see them.
	Short string
}

// HTTPAuto is Config.HTTPAddr's "127.0.0.1 at the broker's port plus
// HTTPPortOffset".
const (
	HTTPAuto       = httpAuto
	HTTPPortOffset = httpPortOffset
)

// ConfigError is a Config that cannot run, with the reason.
type ConfigError struct{ Reason string }

func (e *ConfigError) Error() string { return e.Reason }

func configErr(format string, a ...any) error { return &ConfigError{Reason: fmt.Sprintf(format, a...)} }

// Server is one broker.
type Server struct {
	cfg    Config
	logger *slog.Logger
	secure bool
	host   string
	port   int
	// oauth checks OAUTHBEARER tokens on the Kafka listener (nil: none).
	oauth *jwksFile

	node      *transport.Node
	broker    *broker.Broker
	backend   cluster.Backend
	mode      string
	httpAddr  string
	kafkaAddr string
	// closers undo Start, last first.
	closers []func()
	// keepNode: Close leaves the transport running (KeepTransportOnClose).
	keepNode bool
}

// KeepTransportOnClose makes Close leave the actor listener and system
// running: a process that exits right after Close need not wait for
// them.
func (s *Server) KeepTransportOnClose() { s.keepNode = true }

// New checks cfg and fills in its defaults; Start runs the broker.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientLogger == nil {
		cfg.ClientLogger = slog.New(slog.DiscardHandler)
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "sluice"
	}
	if cfg.CheckTTL == 0 {
		cfg.CheckTTL = consul.DefaultCheckTTL
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = transport.DefaultMaxConnections
	}
	if cfg.MaxConnectionsPerIP == 0 {
		cfg.MaxConnectionsPerIP = transport.DefaultMaxConnectionsPerIP
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = transport.DefaultIdleTimeout
	}
	if cfg.MaxInflightBytes == 0 {
		cfg.MaxInflightBytes = kafka.DefaultBudgetBytes
	}
	if cfg.Build.Version == "" {
		cfg.Build = Build{Version: "dev", Commit: "unknown", Short: "dev (unknown)"}
	}
	b := &cfg.Broker
	b.Logger = cfg.Logger
	if b.MaxOpenLogs == 0 || b.MaxPartitions == 0 {
		limits := partitionLimits(b.LogMemoryBytes, openFilesLimit())
		if b.MaxOpenLogs == 0 {
			b.MaxOpenLogs = limits.openLogs
		}
		if b.MaxPartitions == 0 {
			b.MaxPartitions = limits.partitions
		}
		logLimits(cfg.Logger, limits, b.MaxPartitions)
	}
	if err := b.Validate(); err != nil {
		return nil, &ConfigError{Reason: err.Error()}
	}
	secure := cfg.TLSCert != "" || cfg.TLSKey != "" || cfg.TLSCA != ""
	if secure && (cfg.TLSCert == "" || cfg.TLSKey == "" || cfg.TLSCA == "") {
		return nil, configErr("TLS needs all of --tls-cert, --tls-key and --tls-ca")
	}
	if len(b.SuperUsers) > 0 && !secure {
		return nil, configErr("--super-users needs TLS (--tls-cert, --tls-key, --tls-ca): without it there are no principals")
	}
	for _, p := range b.SuperUsers {
		if !strings.Contains(p, ":") {
			return nil, configErr("--super-users: %q is not a principal like User:admin", p)
		}
	}
	b.Secure = secure
	if cfg.MaxConnections <= 0 || cfg.MaxConnectionsPerIP <= 0 || cfg.IdleTimeout <= 0 {
		return nil, configErr("--max-connections, --max-connections-per-ip and --connections-max-idle must be positive")
	}
	if cfg.MaxInflightBytes < 1<<20 {
		return nil, configErr("--max-inflight-bytes %d: at least 1 MiB (1048576)", cfg.MaxInflightBytes)
	}
	if b.DefaultTopic.MaxMessageBytes > actors.MaxMessageBytesLimit {
		return nil, configErr("--max-message-bytes %d: at most %d", b.DefaultTopic.MaxMessageBytes, actors.MaxMessageBytesLimit)
	}
	if cfg.KafkaAdvertise != "" && cfg.KafkaAddr == "" {
		return nil, configErr("--kafka-advertise needs --kafka-addr")
	}
	if cfg.KafkaSASL && (!secure || cfg.KafkaAddr == "") {
		return nil, configErr("--kafka-sasl needs --kafka-addr and TLS (--tls-cert, --tls-key, --tls-ca): logins name principals for ACLs, which TLS turns on")
	}
	if (cfg.KafkaSASLPlaintext || cfg.KafkaSessionLifetime > 0 || cfg.KafkaOAuthJWKS != "") && !cfg.KafkaSASL {
		return nil, configErr("SASL_PLAINTEXT, --kafka-sasl-session-lifetime and --kafka-oauth-jwks need SASL on the Kafka listener (--kafka-sasl)")
	}
	var oauth *jwksFile
	if cfg.KafkaOAuthJWKS != "" {
		var err error
		if oauth, err = newJWKSFile(cfg.KafkaOAuthJWKS, cfg.KafkaOAuthIssuer, cfg.KafkaOAuthAudience); err != nil {
			return nil, configErr("--kafka-oauth-jwks: %v", err)
		}
	}
	host, port, err := transport.ParseAddr(cfg.Addr)
	if err != nil {
		return nil, configErr("--addr: %v", err)
	}
	return &Server{cfg: cfg, logger: cfg.Logger, secure: secure, host: host, port: port, oauth: oauth}, nil
}

// Start binds the listeners, opens the data directory and the cluster
// backend, and starts the broker's actors; it returns once the broker is
// registered and serving. On an error everything started is undone.
func (s *Server) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	cfg, bcfg := s.cfg, s.cfg.Broker
	if bcfg.UnsafeNoSync {
		s.logger.Warn("--unsafe-no-fsync: partition logs are never fsync'd; acknowledged records are lost in a power failure")
	}
	bcfg.Metrics = metrics.New(metrics.Build{Version: cfg.Build.Version, Commit: cfg.Build.Commit}, metrics.Options{PartitionLabels: cfg.PartitionMetrics})
	// One budget for the bytes every listener holds for its peers.
	inflight := budget.New(cfg.MaxInflightBytes, cfg.MaxInflightBytes/4)
	bcfg.Metrics.InFlightBudget(inflight.Limit(), inflight.Used, inflight.Waits)
	httpLn, err := httpListen(cfg.HTTPAddr, s.port, s.logger)
	if err != nil {
		return err
	}
	if httpLn != nil {
		s.onClose(func() { httpLn.Close() })
		s.httpAddr = httpLn.Addr().String()
	}
	bcfg.DynamicConfigs = &atomic.Pointer[brokerconfig.Values]{}
	tcfg := transport.Config{Host: s.host, Port: s.port, AdvertisedAddr: cfg.Advertise,
		MaxMessageBytes: max(bcfg.MaxFetchBytes, actors.MaxMessageBytesLimit) + (64 << 10),
		MaxConnections:  cfg.MaxConnections, MaxConnectionsPerIP: cfg.MaxConnectionsPerIP, IdleTimeout: cfg.IdleTimeout, Budget: inflight,
		MaxConnectionsPerIPOverrides: cfg.MaxConnectionsPerIPOverrides,
		Limits:                       dynamicConnectionLimits(bcfg.DynamicConfigs), System: cfg.System}
	if cfg.DebugTransport {
		level := slog.LevelDebug
		tcfg.LogLevel = &level
	}
	if s.secure {
		bcfg.Tokens = &actors.TokenTable{}
		tcfg.Security = &transport.Security{Role: transport.RoleBroker, CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, CAFile: cfg.TLSCA,
			Authenticate: bcfg.Tokens.Authenticate}
	} else if !isLoopback(s.host) {
		s.logger.Warn("listening on a non-loopback address without TLS: anyone who reaches it can produce, consume, delete topics "+
			"and send replication messages; start with --tls-cert, --tls-key and --tls-ca", "addr", cfg.Addr)
	}
	node, err := transport.Start(tcfg, s.logger)
	if err != nil {
		return err
	}
	s.node = node
	bcfg.Metrics.Listener("sluice", node.Conns.Open, map[string]metrics.Count{"max_connections": node.Conns.RefusedTotal,
		"max_connections_per_ip": node.Conns.RefusedPerIP, "idle": node.Conns.ClosedForIdle})
	bcfg.Metrics.Guard(map[string]metrics.Count{"unauthenticated": node.Guard.Unauthenticated, "silent": node.Guard.Silent,
		"impostor": node.Guard.Impostors, "unproven": node.Guard.Unproven, "malformed_stream": node.Guard.ClosedStreams,
		"invalid_message": node.Guard.Replaced})
	if s.secure {
		if got, want := node.LocalPrincipal(), transport.BrokerPrincipal(bcfg.ID); got != want {
			return fmt.Errorf("--tls-cert names %q, but this is broker %d: its certificate needs the URI SAN sluice://broker/%d", got, bcfg.ID, bcfg.ID)
		}
	}
	// The HTTP listener: with TLS it is HTTPS with the broker's
	// certificates; its metrics, probes and profiles are for principals
	// allowed to describe the cluster, and the console applies each
	// visitor's ACLs.
	httpAuth := &httpAccess{anonymous: cfg.HTTPAnonymous}
	bcfg.ACLs = &httpAuth.acls
	bcfg.Quotas = &atomic.Pointer[acl.Quotas]{}
	var httpMux *http.ServeMux
	if httpLn != nil {
		guard := func(h http.Handler) http.Handler { return h }
		httpTLS := node.ServerTLS()
		switch {
		case httpTLS != nil && cfg.HTTPAnonymous:
			// A certificate, when given, still names the visitor.
			httpTLS.ClientAuth, httpTLS.VerifyConnection = tls.VerifyClientCertIfGiven, nil
		case httpTLS != nil:
			guard = httpAuth.operatorOnly
		}
		httpMux = httpHandler(bcfg.Metrics, guard, s.logger)
		httpLogger := s.logger.With("listener", "http")
		limited := newHTTPListener(httpLn, httpLogger)
		bcfg.Metrics.Listener("http", limited.Open, map[string]metrics.Count{"limit": limited.Refused})
		srv := serveHTTP(limited, httpMux, httpTLS, newHostAllowList(cfg.HTTPHosts, httpLogger), httpLogger)
		s.onClose(func() { srv.Close() })
	}

	// The Kafka listener is bound before the broker registers, so that the
	// address it announces is the one bound (a port 0 picks a free one).
	var kafkaLn net.Listener
	if cfg.KafkaAddr != "" {
		if kafkaLn, err = net.Listen("tcp", cfg.KafkaAddr); err != nil {
			return fmt.Errorf("--kafka-addr: %w", err)
		}
		s.onClose(func() { kafkaLn.Close() })
		bcfg.KafkaAddr = kafkaLn.Addr().String()
		if cfg.KafkaAdvertise != "" {
			bcfg.KafkaAddr = cfg.KafkaAdvertise
		}
		s.kafkaAddr = bcfg.KafkaAddr
	}

	// The data directory is locked before anything in it is opened.
	dir, err := datadir.Open(bcfg.DataDir)
	if err != nil {
		return err
	}
	s.onClose(func() { dir.Close() })
	bcfg.Dir = dir
	bcfg.Metrics.DataDir(bcfg.DataDir)
	if err := s.openBackend(); err != nil {
		return err
	}
	bcfg.Version = cfg.Build.Short
	bcfg.MetadataStore = "embedded in " + filepath.Join(bcfg.DataDir, "meta")
	if s.mode == "consul" {
		bcfg.MetadataStore = fmt.Sprintf("consul %s (cluster %q)", cfg.Consul, cfg.Cluster)
	}
	b, err := broker.Start(node.System, bcfg, s.backend, node.Addr)
	if err != nil {
		return err
	}
	s.broker = b
	node.ServeSessions()
	if httpMux != nil {
		// The console reads through a client on this broker's own actor
		// system (a second remote in one process would share grpc's
		// global logger with this one), with the broker's rights; with
		// TLS it applies each visitor's ACLs itself.
		clientOpts := []client.Opt{client.WithActorSystem(node.System), client.WithLogger(cfg.ClientLogger)}
		admin, err := client.NewAdmin(node.Addr, client.Options(clientOpts...))
		if err != nil {
			return err
		}
		s.onClose(func() { admin.Close() })
		conCfg := console.Config{Admin: admin, ClientOpts: clientOpts, DefaultMinISR: bcfg.DefaultTopic.MinISR, Write: cfg.ConsoleWrite, Logger: s.logger.With("listener", "console")}
		if s.secure {
			conCfg.Visitor, conCfg.Authorize = httpAuth.visitor, httpAuth.authorize
		}
		con, err := console.New(conCfg)
		if err != nil {
			return err
		}
		con.Register(httpMux)
		consoleCtx, stopConsole := context.WithCancel(context.Background())
		s.onClose(stopConsole)
		go con.Run(consoleCtx)
	}
	if kafkaLn != nil {
		kafkaTLS := node.ServerTLS()
		var login func(user, password string) (string, bool)
		var scram func(user string, mechanism int32) (*messages.ScramCredential, bool)
		var oauthLogin func(token string) (string, time.Time, error)
		if s.oauth != nil {
			oauthLogin = s.oauth.verify
		}
		switch {
		case cfg.KafkaSASLPlaintext:
			scram, kafkaTLS = bcfg.Tokens.Scram, nil
		case cfg.KafkaSASL:
			scram = bcfg.Tokens.Scram
			kafkaTLS = node.SASLServerTLS()
			login = func(user, password string) (string, bool) {
				// The password is the user's token.
				principal, ok := bcfg.Tokens.Authenticate(password)
				return principal, ok && principal == "User:"+user
			}
		}
		kafkaSrv := kafka.NewServer(kafka.Config{Broker: localBroker{system: node.System, pid: b.PID},
			Budget: inflight, MaxFetchBytes: bcfg.MaxFetchBytes,
			MaxFrameBytes:  max(bcfg.MaxFetchBytes, actors.MaxMessageBytesLimit) + (64 << 10),
			MaxConnections: cfg.MaxConnections, MaxConnectionsPerIP: cfg.MaxConnectionsPerIP, IdleTimeout: cfg.IdleTimeout,
			MaxConnectionsPerIPOverrides: cfg.MaxConnectionsPerIPOverrides,
			TopicDefaults:                bcfg.DefaultTopic.Values(), TopicBuiltins: actors.DefaultTopicConfig().Values(),
			BrokerID: bcfg.ID, BrokerSettings: cfg.KafkaSettings, Logger: s.logger.With("listener", "kafka"),
			// With TLS on the broker the Kafka listener is TLS too, with the
			// same certificates and principals.
			TLS: kafkaTLS, Principal: transport.CertPrincipal, Anonymous: transport.AnonymousPrincipal,
			SASL: cfg.KafkaSASL, Login: login, Scram: scram, SessionLifetime: cfg.KafkaSessionLifetime, OAuth: oauthLogin,
			Quotas: bcfg.Quotas.Load, DynamicConfigs: bcfg.DynamicConfigs.Load,
			Metrics: bcfg.Metrics})
		bcfg.Metrics.Listener("kafka", kafkaSrv.Open, map[string]metrics.Count{"limit": kafkaSrv.Refused.Load})
		go func() {
			if err := kafkaSrv.Serve(kafkaLn); err != nil {
				s.logger.Error("kafka listener stopped", "error", err)
			}
		}()
		s.onClose(func() { kafkaSrv.Close() })
	}
	s.logger.Info("sluice broker ready", "addr", node.Addr, "id", bcfg.ID, "data", bcfg.DataDir, "mode", s.mode,
		"cluster_id", b.ClusterID, "broker_epoch", b.Epoch, "tls", s.secure, "version", cfg.Build.Version, "commit", cfg.Build.Commit,
		"go", cfg.Build.GoVersion, "kafka", bcfg.KafkaAddr, "http", s.httpAddr)
	return nil
}

// openBackend opens the Consul backend when Consul is set, else the
// embedded single-node backend kept in the data directory.
func (s *Server) openBackend() error {
	if s.cfg.Consul != "" {
		c, err := consul.Open(consul.Config{Addr: s.cfg.Consul, Cluster: s.cfg.Cluster, CheckTTL: s.cfg.CheckTTL, Logger: s.logger})
		if err != nil {
			return &ConfigError{Reason: err.Error()}
		}
		s.backend, s.mode = c, "consul"
	} else {
		e, err := cluster.OpenEmbedded(filepath.Join(s.cfg.Broker.DataDir, "meta"), cluster.Broker{ID: s.cfg.Broker.ID, Addr: s.node.Addr})
		if err != nil {
			return err
		}
		s.backend, s.mode = e, "embedded"
	}
	backend := s.backend
	s.onClose(func() { backend.Close() })
	return nil
}

// onClose adds f to what Close undoes.
func (s *Server) onClose(f func()) { s.closers = append(s.closers, f) }

// Addr is the actor listener's address, as the broker announces it.
func (s *Server) Addr() string {
	if s.node == nil {
		return ""
	}
	return s.node.Addr
}

// KafkaAddr is the Kafka listener's address as announced ("": none).
func (s *Server) KafkaAddr() string { return s.kafkaAddr }

// HTTPAddr is the HTTP listener's address ("": none).
func (s *Server) HTTPAddr() string { return s.httpAddr }

// System is the broker's actor system: actors spawned on it run beside
// the broker's, and a client given it (client.WithActorSystem) sends
// without a second listener in the process.
func (s *Server) System() *actor.ActorSystem {
	if s.node == nil {
		return nil
	}
	return s.node.System
}

// Node is the broker's transport node.
func (s *Server) Node() *transport.Node { return s.node }

// Mode is "embedded" or "consul".
func (s *Server) Mode() string { return s.mode }

// Evicted is closed when another process took over this broker's id in
// the cluster: the broker must stop.
func (s *Server) Evicted() <-chan struct{} {
	if s.backend == nil {
		return nil
	}
	return s.backend.Evicted()
}

// ErrStopTimeout is Close's error when the broker's actors did not stop in
// time.
var ErrStopTimeout = errors.New("shutdown did not finish in 30 s")

// Close stops the broker's actors, then the listeners, the backend and the
// data directory's lock, last started first.
func (s *Server) Close() error {
	var err error
	if b := s.broker; b != nil {
		s.broker = nil
		done := make(chan struct{})
		go func() {
			b.Stop()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			err = ErrStopTimeout
		}
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
	if s.node != nil && !s.keepNode {
		s.node.Stop()
	}
	return err
}

// isLoopback reports whether host only listens on the loopback interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dynamicConnectionLimits reads the dynamic max.connections,
// max.connections.per.ip and its overrides for the broker's own listener
// (unset: the flags).
func dynamicConnectionLimits(values *atomic.Pointer[brokerconfig.Values]) func() transport.ConnLimits {
	return func() transport.ConnLimits {
		v := values.Load()
		if v == nil {
			return transport.ConnLimits{}
		}
		limits := transport.ConnLimits{Max: v.Int(brokerconfig.MaxConnections, 0), PerIP: v.Int(brokerconfig.MaxConnectionsPerIP, 0)}
		if list, ok := v.Get(brokerconfig.MaxConnectionsPerIPOverrides); ok {
			limits.PerIPOverrides, _ = brokerconfig.ParseIPOverrides(list) // checked when set
		}
		return limits
	}
}
