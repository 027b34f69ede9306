package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/broker"
	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/console"
	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/kafka"
	"github.com/sluicemq/sluice/metrics"
	"github.com/sluicemq/sluice/storage/datadir"
	"github.com/sluicemq/sluice/storage/syncjournal"
	"github.com/sluicemq/sluice/transport"
)

func runBroker(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("broker", stdout, stderr)
	def := actors.DefaultBrokerConfig()
	data := fs.String("data", "./sluice-data", "data directory")
	addr := fs.String("addr", "127.0.0.1:9470", "host:port to listen on")
	advertise := fs.String("advertise", "", "host:port other brokers and clients reach this broker at (default: --addr)")
	id := fs.Int("id", 0, "broker id, unique in the cluster")
	consulAddr := fs.String("consul", "", "Consul agent host:port: join a cluster (default: embedded single node)")
	clusterName := fs.String("cluster", "sluice", "cluster name (with --consul)")
	checkTTL := fs.Duration("check-ttl", cluster.DefaultCheckTTL, "Consul health-check TTL: a broker silent this long is dead (with --consul)")
	autoCreate := fs.Bool("auto-create-topics", false, "create unknown topics on first use")
	partitions := fs.Int("default-partitions", def.DefaultPartitions, "partitions of topics created without a count")
	rf := fs.Int("default-replication-factor", def.DefaultReplicationFactor, "replication factor of topics created without one")
	maxMsg := fs.Int("max-message-bytes", def.DefaultTopic.MaxMessageBytes, "largest record batch a topic accepts by default")
	segment := fs.Int64("segment-bytes", def.DefaultTopic.SegmentBytes, "log segment size")
	retentionMs := fs.Int64("retention-ms", def.DefaultTopic.RetentionMs, "default retention.ms (-1: forever)")
	retentionBytes := fs.Int64("retention-bytes", def.DefaultTopic.RetentionBytes, "default retention.bytes per partition (-1: no limit)")
	minISR := fs.Int("min-insync-replicas", def.DefaultTopic.MinISR, "default min.insync.replicas")
	lag := fs.Duration("replica-lag-time-max", def.ReplicaLagTimeMax, "a follower not caught up for this long leaves the ISR")
	retentionCheck := fs.Duration("retention-check-interval", def.RetentionCheckInterval, "how often retention runs")
	maxFetch := fs.Int("max-fetch-bytes", def.MaxFetchBytes, "largest fetch response")
	offsetsPartitions := fs.Int("offsets-partitions", def.OffsetsPartitions, "partitions of the internal "+actors.OffsetsTopic+" topic")
	offsetsRF := fs.Int("offsets-replication-factor", def.OffsetsReplicationFactor, "replicas of "+actors.OffsetsTopic+" (capped by the live brokers)")
	rebalanceDelay := fs.Duration("group-initial-rebalance-delay", def.GroupInitialRebalanceDelay, "how long a new group waits for more members")
	minSession := fs.Duration("group-min-session-timeout", def.GroupMinSessionTimeout, "smallest session timeout a member may ask for")
	maxSession := fs.Duration("group-max-session-timeout", def.GroupMaxSessionTimeout, "largest session timeout a member may ask for")
	groupMaxSize := fs.Int("group-max-size", def.GroupMaxSize, "most members of one consumer group; a join beyond gets GROUP_MAX_SIZE_REACHED (Kafka's group.max.size)")
	groupMetadata := fs.Int64("group-metadata-max-bytes", def.GroupMetadataMaxBytes, "bytes the members of all groups this broker coordinates may carry (topics, protocols, metadata); one principal may hold a quarter, a join beyond gets GROUP_MAX_SIZE_REACHED")
	pidExpiration := fs.Duration("producer-id-expiration", def.ProducerIDExpiration,
		"forget an idempotent producer that has written nothing for this long (Kafka's producer.id.expiration.ms)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	maxConns := fs.Int("max-connections", transport.DefaultMaxConnections, "most connections the broker's listener holds; more are closed at once (Kafka's max.connections)")
	maxConnsPerIP := fs.Int("max-connections-per-ip", transport.DefaultMaxConnectionsPerIP, "most connections from one remote address (Kafka's max.connections.per.ip)")
	inflight := fs.Int64("max-inflight-bytes", kafka.DefaultBudgetBytes, "bytes of requests read and not yet answered, and of answers not yet written, the broker holds at most; a connection waits to read its next request until there is room, and one remote address may hold a quarter (Kafka's queued.max.request.bytes)")
	idleConns := fs.Duration("connections-max-idle", transport.DefaultIdleTimeout, "close a connection that sends nothing, not even a keepalive ping, for this long")
	httpAddr := fs.String("http", httpAuto, fmt.Sprintf("host:port of the HTTP listener: /metrics, /healthz, /readyz, /debug/pprof/ (%q: 127.0.0.1 at the broker's port + %d; \"\": off)", httpAuto, httpPortOffset))
	httpAnonymous := fs.Bool("http-anonymous", false, "with TLS, serve metrics, probes and profiles to clients without a certificate, unauthorized (for probes that cannot present one); the console treats them as User:ANONYMOUS")
	var httpHosts []string
	fs.Func("http-host", "a host name the HTTP listener answers to besides its IP addresses, localhost and the machine's name (repeat or comma-separate); without TLS other names are refused, so a page of another site cannot reach the console by making its name resolve here", func(v string) error {
		httpHosts = append(httpHosts, strings.Split(v, ",")...)
		return nil
	})
	consoleWrite := fs.Bool("console-write", false, "let the web console create and delete topics and reset group offsets (read-only by default)")
	partitionMetrics := fs.Bool("metrics-partition-labels", true, "export per-partition series (HW, log start and end, size); turn off for clusters with many partitions")
	logMemory := fs.Int64("log-memory-bytes", def.LogMemoryBytes, "memory the partition logs may hold in all: idle logs are closed and segment sizes capped to keep it")
	logIdle := fs.Duration("log-idle-time", def.LogIdleTime, "close a partition log unused this long (it reopens on its next use)")
	maxPartitions := fs.Int("max-partitions", 0, "most partition replicas one broker hosts; creating more is refused (default: from --log-memory-bytes and the open-files limit)")
	tlsCert := fs.String("tls-cert", "", "this broker's certificate (PEM), with a URI SAN sluice://broker/<id>: turns on mutual TLS, principals and ACLs")
	tlsKey := fs.String("tls-key", "", "the key of --tls-cert (PEM)")
	tlsCA := fs.String("tls-ca", "", "the cluster's CA certificates (PEM): peers must present a certificate it signed")
	superUsers := fs.String("super-users", "", "comma-separated principals that bypass ACLs (User:admin,User:ops)")
	noSync := fs.Bool("unsafe-no-fsync", false, "never fsync partition logs: acknowledged records are lost in a power failure (tests and benchmarks only)")
	kafkaAddr := fs.String("kafka-addr", "", "host:port of a Kafka protocol listener, for Kafka clients (off by default)")
	kafkaAdvertise := fs.String("kafka-advertise", "", "host:port Kafka clients reach the Kafka listener at (default: --kafka-addr as bound)")
	configFile := fs.String("config", "", "read settings from FILE: YAML (.yaml, .yml) or properties (key=value), with flag names or Kafka's (broker.id, log.dirs, num.partitions, ...); SLUICE_* variables and flags override it")
	printCfg := fs.Bool("print-config", false, "print the effective settings, each with where it came from, and exit")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	sources := flagSources(fs)
	if *configFile != "" {
		if err := applyConfigFile(fs, *configFile, sources); err != nil {
			return err
		}
	}
	if *printCfg {
		printConfig(stdout, fs, sources)
		return nil
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return usageErr("%v", err)
	}
	cfg := def
	cfg.ID = int32(*id)
	cfg.DataDir = *data
	cfg.AutoCreateTopics = *autoCreate
	cfg.DefaultPartitions = *partitions
	cfg.DefaultReplicationFactor = *rf
	cfg.DefaultTopic.MaxMessageBytes = *maxMsg
	cfg.DefaultTopic.SegmentBytes = *segment
	cfg.DefaultTopic.RetentionMs = *retentionMs
	cfg.DefaultTopic.RetentionBytes = *retentionBytes
	cfg.DefaultTopic.MinISR = *minISR
	cfg.ReplicaLagTimeMax = *lag
	cfg.RetentionCheckInterval = *retentionCheck
	cfg.MaxFetchBytes = *maxFetch
	cfg.OffsetsPartitions = *offsetsPartitions
	cfg.OffsetsReplicationFactor = *offsetsRF
	cfg.GroupInitialRebalanceDelay = *rebalanceDelay
	cfg.GroupMinSessionTimeout = *minSession
	cfg.GroupMaxSessionTimeout = *maxSession
	cfg.GroupMaxSize = *groupMaxSize
	cfg.GroupMetadataMaxBytes = *groupMetadata
	cfg.ProducerIDExpiration = *pidExpiration
	cfg.UnsafeNoSync = *noSync
	cfg.LogMemoryBytes = *logMemory
	cfg.LogIdleTime = *logIdle
	cfg.Logger = logger
	limits := partitionLimits(*logMemory, openFilesLimit())
	cfg.MaxOpenLogs = limits.openLogs
	cfg.MaxPartitions = limits.partitions
	if *maxPartitions != 0 {
		cfg.MaxPartitions = *maxPartitions
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	secure := *tlsCert != "" || *tlsKey != "" || *tlsCA != ""
	if secure && (*tlsCert == "" || *tlsKey == "" || *tlsCA == "") {
		return usageErr("TLS needs all of --tls-cert, --tls-key and --tls-ca")
	}
	if *superUsers != "" && !secure {
		return usageErr("--super-users needs TLS (--tls-cert, --tls-key, --tls-ca): without it there are no principals")
	}
	cfg.Secure = secure
	for _, p := range strings.Split(*superUsers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !strings.Contains(p, ":") {
				return usageErr("--super-users: %q is not a principal like User:admin", p)
			}
			cfg.SuperUsers = append(cfg.SuperUsers, p)
		}
	}
	if *maxConns <= 0 || *maxConnsPerIP <= 0 || *idleConns <= 0 {
		return usageErr("--max-connections, --max-connections-per-ip and --connections-max-idle must be positive")
	}
	if *inflight < 1<<20 {
		return usageErr("--max-inflight-bytes %d: at least 1 MiB (1048576)", *inflight)
	}
	if *maxMsg > actors.MaxMessageBytesLimit {
		return usageErr("--max-message-bytes %d: at most %d", *maxMsg, actors.MaxMessageBytesLimit)
	}
	if *kafkaAdvertise != "" && *kafkaAddr == "" {
		return usageErr("--kafka-advertise needs --kafka-addr")
	}

	// Crash tests record what each fsync made durable (see syncjournal).
	if on, err := syncjournal.FromEnv(); err != nil {
		return err
	} else if on {
		logger.Warn("recording every fsync for crash tests", "journal", os.Getenv(syncjournal.Env))
	}
	logLimits(logger, limits, cfg.MaxPartitions)
	setMemoryLimit(logger, cfg.LogMemoryBytes)
	if *noSync {
		logger.Warn("--unsafe-no-fsync: partition logs are never fsync'd; acknowledged records are lost in a power failure")
	}
	host, port, err := transport.ParseAddr(*addr)
	if err != nil {
		return usageErr("--addr: %v", err)
	}
	build := readBuildInfo()
	cfg.Metrics = metrics.New(metrics.Build{Version: build.Version, Commit: build.Commit}, metrics.Options{PartitionLabels: *partitionMetrics})
	// One budget for the bytes every listener holds for its peers.
	inflightBudget := budget.New(*inflight, *inflight/4)
	cfg.Metrics.InFlightBudget(inflightBudget.Limit(), inflightBudget.Used, inflightBudget.Waits)
	httpLn, err := httpListen(*httpAddr, port, logger)
	if err != nil {
		return err
	}
	httpBound := ""
	if httpLn != nil {
		defer httpLn.Close()
		httpBound = httpLn.Addr().String()
	}
	tcfg := transport.Config{Host: host, Port: port, AdvertisedAddr: *advertise,
		MaxMessageBytes: max(cfg.MaxFetchBytes, actors.MaxMessageBytesLimit) + (64 << 10),
		MaxConnections:  *maxConns, MaxConnectionsPerIP: *maxConnsPerIP, IdleTimeout: *idleConns, Budget: inflightBudget}
	if *logLevel == "debug" {
		level := slog.LevelDebug
		tcfg.LogLevel = &level
	}
	if secure {
		cfg.Tokens = &actors.TokenTable{}
		tcfg.Security = &transport.Security{Role: transport.RoleBroker, CertFile: *tlsCert, KeyFile: *tlsKey, CAFile: *tlsCA,
			Authenticate: cfg.Tokens.Authenticate}
	} else if !isLoopback(host) {
		logger.Warn("listening on a non-loopback address without TLS: anyone who reaches it can produce, consume, delete topics "+
			"and send replication messages; start with --tls-cert, --tls-key and --tls-ca", "addr", *addr)
	}
	// The remote endpoint is not shut down on exit: the process ends right
	// after the broker actor has stopped, and protoactor's Remote.Shutdown
	// races with its own stream readers.
	node, err := transport.Start(tcfg, logger)
	if err != nil {
		return err
	}
	cfg.Metrics.Listener("sluice", node.Conns.Open, map[string]metrics.Count{"max_connections": node.Conns.RefusedTotal,
		"max_connections_per_ip": node.Conns.RefusedPerIP, "idle": node.Conns.ClosedForIdle})
	cfg.Metrics.Guard(map[string]metrics.Count{"unauthenticated": node.Guard.Unauthenticated, "silent": node.Guard.Silent,
		"impostor": node.Guard.Impostors, "unproven": node.Guard.Unproven, "malformed_stream": node.Guard.ClosedStreams,
		"invalid_message": node.Guard.Replaced})
	if secure {
		if got, want := node.LocalPrincipal(), transport.BrokerPrincipal(cfg.ID); got != want {
			return fmt.Errorf("--tls-cert names %q, but this is broker %d: its certificate needs the URI SAN sluice://broker/%d", got, cfg.ID, cfg.ID)
		}
		go reloadOnHangup(node, logger)
	}
	// The HTTP listener: with TLS it is HTTPS with the broker's
	// certificates; its metrics, probes and profiles are for principals
	// allowed to describe the cluster, and the console applies each
	// visitor's ACLs.
	httpAuth := &httpAccess{anonymous: *httpAnonymous}
	cfg.ACLs = &httpAuth.acls
	var httpMux *http.ServeMux
	if httpLn != nil {
		guard := func(h http.Handler) http.Handler { return h }
		httpTLS := node.ServerTLS()
		switch {
		case httpTLS != nil && *httpAnonymous:
			// A certificate, when given, still names the visitor.
			httpTLS.ClientAuth, httpTLS.VerifyConnection = tls.VerifyClientCertIfGiven, nil
		case httpTLS != nil:
			guard = httpAuth.operatorOnly
		}
		httpMux = httpHandler(cfg.Metrics, guard, logger)
		httpLogger := logger.With("listener", "http")
		limited := newHTTPListener(httpLn, httpLogger)
		cfg.Metrics.Listener("http", limited.Open, map[string]metrics.Count{"limit": limited.Refused})
		srv := serveHTTP(limited, httpMux, httpTLS, newHostAllowList(httpHosts, httpLogger), httpLogger)
		defer srv.Close()
	}

	// The Kafka listener is bound before the broker registers, so that the
	// address it announces is the one bound (a port 0 picks a free one).
	var kafkaLn net.Listener
	if *kafkaAddr != "" {
		if kafkaLn, err = net.Listen("tcp", *kafkaAddr); err != nil {
			return fmt.Errorf("--kafka-addr: %w", err)
		}
		defer kafkaLn.Close()
		cfg.KafkaAddr = kafkaLn.Addr().String()
		if *kafkaAdvertise != "" {
			cfg.KafkaAddr = *kafkaAdvertise
		}
	}

	// The data directory is locked before anything in it is opened.
	dir, err := datadir.Open(cfg.DataDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	cfg.Dir = dir
	cfg.Metrics.DataDir(cfg.DataDir)
	backend, mode, err := openBackend(cfg, node.Addr, *consulAddr, *clusterName, *checkTTL, logger)
	if err != nil {
		return err
	}
	defer backend.Close()
	cfg.Version = build.short()
	cfg.MetadataStore = "embedded in " + filepath.Join(cfg.DataDir, "meta")
	if mode == "consul" {
		cfg.MetadataStore = fmt.Sprintf("consul %s (cluster %q)", *consulAddr, *clusterName)
	}
	b, err := broker.Start(node.System, cfg, backend, node.Addr)
	if err != nil {
		return err
	}
	if httpMux != nil {
		// The console reads through a client on this broker's own actor
		// system (a second remote in one process would share grpc's
		// global logger with this one), with the broker's rights; with
		// TLS it applies each visitor's ACLs itself.
		clientOpts := []client.Opt{client.WithActorSystem(node.System), client.WithLogger(clientLogger(stderr))}
		admin, err := client.NewAdmin(node.Addr, client.Options(clientOpts...))
		if err != nil {
			return err
		}
		defer admin.Close()
		conCfg := console.Config{Admin: admin, ClientOpts: clientOpts, DefaultMinISR: cfg.DefaultTopic.MinISR, Write: *consoleWrite, Logger: logger.With("listener", "console")}
		if secure {
			conCfg.Visitor, conCfg.Authorize = httpAuth.visitor, httpAuth.authorize
		}
		con, err := console.New(conCfg)
		if err != nil {
			return err
		}
		con.Register(httpMux)
		consoleCtx, stopConsole := context.WithCancel(context.Background())
		defer stopConsole()
		go con.Run(consoleCtx)
	}
	var kafkaSrv *kafka.Server
	if kafkaLn != nil {
		kafkaSrv = kafka.NewServer(kafka.Config{Broker: localBroker{system: node.System, pid: b.PID},
			Budget: inflightBudget, MaxFetchBytes: cfg.MaxFetchBytes,
			MaxFrameBytes:  max(cfg.MaxFetchBytes, actors.MaxMessageBytesLimit) + (64 << 10),
			MaxConnections: *maxConns, MaxConnectionsPerIP: *maxConnsPerIP, IdleTimeout: *idleConns,
			TopicDefaults: cfg.DefaultTopic.Values(), Logger: logger.With("listener", "kafka"),
			// With TLS on the broker the Kafka listener is TLS too, with the
			// same certificates and principals.
			TLS: node.ServerTLS(), Principal: transport.CertPrincipal, Anonymous: transport.AnonymousPrincipal,
			Metrics: cfg.Metrics})
		cfg.Metrics.Listener("kafka", kafkaSrv.Open, map[string]metrics.Count{"limit": kafkaSrv.Refused.Load})
		go func() {
			if err := kafkaSrv.Serve(kafkaLn); err != nil {
				logger.Error("kafka listener stopped", "error", err)
			}
		}()
		defer kafkaSrv.Close()
	}
	logger.Info("sluice broker ready", "addr", node.Addr, "id", cfg.ID, "data", cfg.DataDir, "mode", mode,
		"cluster_id", b.ClusterID, "broker_epoch", b.Epoch, "tls", secure, "version", build.Version, "commit", build.Commit, "go", build.GoVersion, "kafka", cfg.KafkaAddr, "http", httpBound)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-backend.Evicted():
		// Another process runs as this broker now; acting on as well would
		// give the cluster two brokers with one id.
		logger.Error("another process took over this broker id; stopping", "id", cfg.ID)
		b.Stop()
		return fmt.Errorf("broker %d was taken over by another process", cfg.ID)
	}
	done := make(chan struct{})
	go func() {
		b.Stop()
		close(done)
	}()
	select {
	case <-done:
		logger.Info("stopped")
	case <-time.After(30 * time.Second):
		return fmt.Errorf("shutdown did not finish in 30 s")
	}
	return nil
}

// openBackend returns the Consul backend when consulAddr is set, else the
// embedded single-node backend kept in the data directory.
func openBackend(cfg actors.BrokerConfig, addr, consulAddr, clusterName string, checkTTL time.Duration, logger *slog.Logger) (cluster.Backend, string, error) {
	if consulAddr != "" {
		c, err := cluster.OpenConsul(cluster.ConsulConfig{Addr: consulAddr, Cluster: clusterName, CheckTTL: checkTTL, Logger: logger})
		if err != nil {
			return nil, "", usageErr("%v", err)
		}
		return c, "consul", nil
	}
	e, err := cluster.OpenEmbedded(filepath.Join(cfg.DataDir, "meta"), cluster.Broker{ID: cfg.ID, Addr: addr})
	if err != nil {
		return nil, "", err
	}
	return e, "embedded", nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// clientLogger is the quiet logger of client commands.
func clientLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// isLoopback reports whether host only listens on the loopback interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// reloadOnHangup reads the TLS files again on SIGHUP (they are also
// reloaded when they change).
func reloadOnHangup(node *transport.Node, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	for range hup {
		if err := node.ReloadTLS(); err != nil {
			logger.Error("SIGHUP: cannot reload the TLS files; keeping the previous ones", "error", err)
			continue
		}
		logger.Info("SIGHUP: TLS files reloaded")
	}
}

// localBroker is the Kafka listener's way to the broker actor of this
// process.
type localBroker struct {
	system *actor.ActorSystem
	pid    *actor.PID
}

func (l localBroker) Ask(c kafka.Caller, req proto.Message, timeout time.Duration) kafka.Answer {
	p := reply.NewPending(l.system, timeout)
	l.system.Root.Send(l.pid, l.envelope(c, req, p.PID()))
	return pendingAnswer{p}
}

// envelope carries the caller as the transport stamps a request from its
// own listener, so that the broker authorizes both doors alike.
func (l localBroker) envelope(c kafka.Caller, req proto.Message, sender *actor.PID) *actor.MessageEnvelope {
	env := &actor.MessageEnvelope{Message: req, Sender: sender}
	env.SetHeader(transport.PeerHeader, c.Peer)
	env.SetHeader(transport.PrincipalHeader, c.Principal)
	return env
}

type pendingAnswer struct{ p *reply.Pending }

func (a pendingAnswer) Wait() (proto.Message, error) {
	res, err := a.p.Wait()
	if err != nil {
		return nil, err
	}
	msg, ok := res.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	return msg, nil
}
