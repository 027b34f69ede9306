package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster/consul"
	"github.com/sluicemq/sluice/kafka"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/server"
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
	checkTTL := fs.Duration("check-ttl", consul.DefaultCheckTTL, "Consul health-check TTL: a broker silent this long is dead (with --consul)")
	autoCreate := fs.Bool("auto-create-topics", false, "create unknown topics on first use")
	partitions := fs.Int("default-partitions", def.DefaultPartitions, "partitions of topics created without a count")
	rf := fs.Int("default-replication-factor", def.DefaultReplicationFactor, "replication factor of topics created without one")
	maxMsg := fs.Int("max-message-bytes", def.DefaultTopic.MaxMessageBytes, "largest record batch a topic accepts by default")
	segment := fs.Int64("segment-bytes", def.DefaultTopic.SegmentBytes, "log segment size")
	retentionMs := fs.Int64("retention-ms", def.DefaultTopic.RetentionMs, "default retention.ms (-1: forever)")
	retentionBytes := fs.Int64("retention-bytes", def.DefaultTopic.RetentionBytes, "default retention.bytes per partition (-1: no limit)")
	minISR := fs.Int("min-insync-replicas", def.DefaultTopic.MinISR, "default min.insync.replicas")
	rack := fs.String("rack", "", "where this broker runs (a rack, an availability zone): when every broker names one, a new partition's replicas go to different racks (Kafka's broker.rack)")
	lag := fs.Duration("replica-lag-time-max", def.ReplicaLagTimeMax, "a follower not caught up for this long leaves the ISR")
	session := fs.Duration("broker-session-timeout", def.BrokerSessionTimeout, "a broker the controller's broker cannot reach for this long loses its leaderships and leaves the ISRs; a controller that cannot reach half of the brokers for this long hands over")
	autoRebalance := fs.Bool("auto-leader-rebalance", def.AutoLeaderRebalance, "give leadership back to preferred replicas (the first of each partition's replicas) when a broker leads too few of its own; the controller checks every --leader-imbalance-check-interval")
	imbalanceCheck := fs.Duration("leader-imbalance-check-interval", def.LeaderImbalanceCheckInterval, "how often the controller looks for brokers that lead too few of the partitions they are preferred for")
	imbalancePct := fs.Int("leader-imbalance-per-broker-percentage", int(def.LeaderImbalanceRatio*100), "share of a broker's preferred partitions led by others above which their leadership is given back to it")
	retentionCheck := fs.Duration("retention-check-interval", def.RetentionCheckInterval, "how often retention runs")
	maxFetch := fs.Int("max-fetch-bytes", def.MaxFetchBytes, "largest fetch response")
	offsetsPartitions := fs.Int("offsets-partitions", def.OffsetsPartitions, "partitions of the internal "+actors.OffsetsTopic+" topic")
	offsetsRetention := fs.Duration("offsets-retention", def.OffsetsRetention, "how long "+actors.OffsetsTopic+" keeps a record; every group's state is written again each third of it (Kafka's offsets.retention.minutes)")
	offsetsRF := fs.Int("offsets-replication-factor", def.OffsetsReplicationFactor, "replicas of "+actors.OffsetsTopic+" (capped by the live brokers)")
	rebalanceDelay := fs.Duration("group-initial-rebalance-delay", def.GroupInitialRebalanceDelay, "how long a new group waits for more members")
	minSession := fs.Duration("group-min-session-timeout", def.GroupMinSessionTimeout, "smallest session timeout a member may ask for")
	maxSession := fs.Duration("group-max-session-timeout", def.GroupMaxSessionTimeout, "largest session timeout a member may ask for")
	groupMaxSize := fs.Int("group-max-size", def.GroupMaxSize, "most members of one consumer group; a join beyond gets GROUP_MAX_SIZE_REACHED (Kafka's group.max.size)")
	consumerSession := fs.Duration("group-consumer-session-timeout", def.GroupConsumerSessionTimeout, "a member of a consumer group of Kafka's new protocol (KIP-848) that does not heartbeat for this long is removed (Kafka's group.consumer.session.timeout.ms)")
	consumerHeartbeat := fs.Duration("group-consumer-heartbeat-interval", def.GroupConsumerHeartbeatInterval, "how often members of consumer groups of Kafka's new protocol heartbeat (Kafka's group.consumer.heartbeat.interval.ms)")
	groupMetadata := fs.Int64("group-metadata-max-bytes", def.GroupMetadataMaxBytes, "bytes the members of all groups this broker coordinates may carry (topics, protocols, metadata, and 1 KiB each besides); one principal may hold a quarter, a join beyond gets GROUP_MAX_SIZE_REACHED")
	pidExpiration := fs.Duration("producer-id-expiration", def.ProducerIDExpiration,
		"forget an idempotent producer that has written nothing for this long (Kafka's producer.id.expiration.ms)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	maxConns := fs.Int("max-connections", transport.DefaultMaxConnections, "most connections the broker's listener holds; more are closed at once (Kafka's max.connections)")
	maxConnsPerIP := fs.Int("max-connections-per-ip", transport.DefaultMaxConnectionsPerIP, "most connections from one remote address (Kafka's max.connections.per.ip)")
	perIPOverrides := fs.String("max-connections-per-ip-overrides", "", "ADDRESS:COUNT,...: other limits for some IP addresses (Kafka's max.connections.per.ip.overrides)")
	inflight := fs.Int64("max-inflight-bytes", kafka.DefaultBudgetBytes, "bytes of requests read and not yet answered, and of answers not yet written, the broker holds at most; a connection waits to read its next request until there is room, and one remote address may hold a quarter (Kafka's queued.max.request.bytes)")
	idleConns := fs.Duration("connections-max-idle", transport.DefaultIdleTimeout, "close a connection that sends nothing, not even a keepalive ping, for this long")
	httpAddr := fs.String("http", server.HTTPAuto, fmt.Sprintf("host:port of the HTTP listener: /metrics, /healthz, /readyz, /debug/pprof/ (%q: 127.0.0.1 at the broker's port + %d; \"\": off)", server.HTTPAuto, server.HTTPPortOffset))
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
	kafkaSASL := fs.Bool("kafka-sasl", false, "the Kafka listener also takes SASL logins over TLS (SASL_SSL) from clients without a certificate: SCRAM-SHA-256/512 with the password of 'sluice user password', PLAIN with the token of 'sluice user create'; needs TLS")
	kafkaProtocol := fs.String("kafka-security-protocol", "", "the Kafka listener's security protocol: SSL (mutual TLS, the default with TLS), SASL_SSL (as --kafka-sasl) or SASL_PLAINTEXT (SCRAM logins without TLS: the cluster still runs with TLS)")
	kafkaOAuthJWKS := fs.String("kafka-oauth-jwks", "", "the Kafka listener also takes SASL OAUTHBEARER logins with JWTs signed by a key of this JWKS file (read again when it changes); the token's sub claim names the principal User:SUB; needs SASL")
	kafkaOAuthIssuer := fs.String("kafka-oauth-issuer", "", "with --kafka-oauth-jwks: the iss claim tokens must have")
	kafkaOAuthAudience := fs.String("kafka-oauth-audience", "", "with --kafka-oauth-jwks: the audience tokens must name")
	kafkaSessionLifetime := fs.Duration("kafka-sasl-session-lifetime", 0, "a SASL login on the Kafka listener lasts this long; clients log in again on the connection before then (KIP-368), or are disconnected, so a removed password stops working on open connections too (0: forever)")
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
	cfg.Rack = *rack
	cfg.AutoLeaderRebalance = *autoRebalance
	cfg.LeaderImbalanceCheckInterval = *imbalanceCheck
	cfg.BrokerSessionTimeout = *session
	cfg.LeaderImbalanceRatio = float64(*imbalancePct) / 100
	cfg.RetentionCheckInterval = *retentionCheck
	cfg.MaxFetchBytes = *maxFetch
	cfg.OffsetsPartitions = *offsetsPartitions
	cfg.OffsetsRetention = *offsetsRetention
	cfg.OffsetsReplicationFactor = *offsetsRF
	cfg.GroupInitialRebalanceDelay = *rebalanceDelay
	cfg.GroupMinSessionTimeout = *minSession
	cfg.GroupMaxSessionTimeout = *maxSession
	cfg.GroupMaxSize = *groupMaxSize
	cfg.GroupConsumerSessionTimeout = *consumerSession
	cfg.GroupConsumerHeartbeatInterval = *consumerHeartbeat
	cfg.GroupMetadataMaxBytes = *groupMetadata
	cfg.ProducerIDExpiration = *pidExpiration
	cfg.UnsafeNoSync = *noSync
	cfg.LogMemoryBytes = *logMemory
	cfg.LogIdleTime = *logIdle
	cfg.MaxPartitions = *maxPartitions
	for _, p := range strings.Split(*superUsers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.SuperUsers = append(cfg.SuperUsers, p)
		}
	}
	// 0 means "the default" to server.New; on the command line it is a
	// mistake.
	if *maxConns <= 0 || *maxConnsPerIP <= 0 || *idleConns <= 0 {
		return usageErr("--max-connections, --max-connections-per-ip and --connections-max-idle must be positive")
	}
	overrides, err := brokerconfig.ParseIPOverrides(*perIPOverrides)
	if err != nil {
		return usageErr("--max-connections-per-ip-overrides: %v", err)
	}
	if *inflight < 1<<20 {
		return usageErr("--max-inflight-bytes %d: at least 1 MiB (1048576)", *inflight)
	}
	plaintextSASL := false
	switch strings.ToUpper(*kafkaProtocol) {
	case "", "SSL":
	case "SASL_SSL":
		*kafkaSASL = true
	case "SASL_PLAINTEXT":
		*kafkaSASL, plaintextSASL = true, true
	default:
		return usageErr("--kafka-security-protocol %q: want SSL, SASL_SSL or SASL_PLAINTEXT", *kafkaProtocol)
	}
	if *kafkaSessionLifetime < 0 {
		return usageErr("--kafka-sasl-session-lifetime %v: want 0 (forever) or more", *kafkaSessionLifetime)
	}
	build := readBuildInfo()
	srv, err := server.New(server.Config{Broker: cfg, Addr: *addr, Advertise: *advertise,
		Consul: *consulAddr, Cluster: *clusterName, CheckTTL: *checkTTL,
		KafkaAddr: *kafkaAddr, KafkaAdvertise: *kafkaAdvertise, KafkaSASL: *kafkaSASL,
		KafkaSASLPlaintext: plaintextSASL, KafkaSessionLifetime: *kafkaSessionLifetime,
		KafkaOAuthJWKS: *kafkaOAuthJWKS, KafkaOAuthIssuer: *kafkaOAuthIssuer, KafkaOAuthAudience: *kafkaOAuthAudience,
		HTTPAddr: *httpAddr, HTTPAnonymous: *httpAnonymous, HTTPHosts: httpHosts, ConsoleWrite: *consoleWrite,
		PartitionMetrics: *partitionMetrics, KafkaSettings: kafkaSettings(fs, sources),
		MaxConnections: *maxConns, MaxConnectionsPerIP: *maxConnsPerIP, MaxConnectionsPerIPOverrides: overrides,
		IdleTimeout: *idleConns, MaxInflightBytes: *inflight,
		TLSCert: *tlsCert, TLSKey: *tlsKey, TLSCA: *tlsCA,
		Build:  server.Build{Version: build.Version, Commit: build.Commit, GoVersion: build.GoVersion, Short: build.short()},
		Logger: logger, DebugTransport: *logLevel == "debug", ClientLogger: clientLogger(stderr)})
	var cerr *server.ConfigError
	if errors.As(err, &cerr) {
		return usageErr("%v", cerr)
	} else if err != nil {
		return err
	}

	// Crash tests record what each fsync made durable (see syncjournal).
	if on, err := syncjournal.FromEnv(); err != nil {
		return err
	} else if on {
		logger.Warn("recording every fsync for crash tests", "journal", os.Getenv(syncjournal.Env))
	}
	setMemoryLimit(logger, cfg.LogMemoryBytes)
	// The transport is not shut down on exit: the process ends right after
	// the broker actor has stopped, and protoactor's Remote.Shutdown races
	// with its own stream readers.
	srv.KeepTransportOnClose()
	if err := srv.Start(context.Background()); err != nil {
		if errors.As(err, &cerr) {
			return usageErr("%v", cerr)
		}
		return err
	}
	if *tlsCert != "" {
		go reloadOnHangup(srv.Node(), logger)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-srv.Evicted():
		// Another process runs as this broker now; acting on as well would
		// give the cluster two brokers with one id.
		logger.Error("another process took over this broker id; stopping", "id", cfg.ID)
		srv.Close()
		return fmt.Errorf("broker %d was taken over by another process", cfg.ID)
	}
	if err := srv.Close(); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
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
