package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/broker"
	"github.com/sluicemq/sluice/actors/transport"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/storage/datadir"
	"github.com/sluicemq/sluice/storage/syncjournal"
)

func runBroker(args []string, stderr io.Writer) error {
	fs := newFlagSet("broker", stderr)
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
	pidExpiration := fs.Duration("producer-id-expiration", def.ProducerIDExpiration,
		"forget an idempotent producer that has written nothing for this long (Kafka's producer.id.expiration.ms)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	pprofAddr := fs.String("pprof", "", "serve Go's pprof profiles on this host:port (off by default)")
	logMemory := fs.Int64("log-memory-bytes", def.LogMemoryBytes, "memory the partition logs may hold in all: idle logs are closed and segment sizes capped to keep it")
	logIdle := fs.Duration("log-idle-time", def.LogIdleTime, "close a partition log unused this long (it reopens on its next use)")
	maxPartitions := fs.Int("max-partitions", 0, "most partition replicas one broker hosts; creating more is refused (default: from --log-memory-bytes and the open-files limit)")
	noSync := fs.Bool("unsafe-no-fsync", false, "never fsync partition logs: acknowledged records are lost in a power failure (tests and benchmarks only)")
	if _, err := parseArgs(fs, args); err != nil {
		return err
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
	if *maxMsg > actors.MaxMessageBytesLimit {
		return usageErr("--max-message-bytes %d: at most %d", *maxMsg, actors.MaxMessageBytesLimit)
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
	if *pprofAddr != "" {
		go func() {
			logger.Info("pprof listening", "addr", *pprofAddr)
			if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
				logger.Error("pprof", "error", err)
			}
		}()
	}
	host, port, err := transport.ParseAddr(*addr)
	if err != nil {
		return usageErr("--addr: %v", err)
	}
	tcfg := transport.Config{Host: host, Port: port, AdvertisedAddr: *advertise,
		MaxMessageBytes: max(cfg.MaxFetchBytes, actors.MaxMessageBytesLimit) + (64 << 10)}
	if *logLevel == "debug" {
		level := slog.LevelDebug
		tcfg.LogLevel = &level
	}
	// The remote endpoint is not shut down on exit: the process ends right
	// after the broker actor has stopped, and protoactor's Remote.Shutdown
	// races with its own stream readers.
	node, err := transport.Start(tcfg, logger)
	if err != nil {
		return err
	}

	// The data directory is locked before anything in it is opened.
	dir, err := datadir.Open(cfg.DataDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	cfg.Dir = dir
	backend, mode, err := openBackend(cfg, node.Addr, *consulAddr, *clusterName, *checkTTL, logger)
	if err != nil {
		return err
	}
	defer backend.Close()
	b, err := broker.Start(node.System, cfg, backend, node.Addr)
	if err != nil {
		return err
	}
	logger.Info("sluice broker ready", "addr", node.Addr, "id", cfg.ID, "data", cfg.DataDir, "mode", mode,
		"cluster_id", b.ClusterID, "broker_epoch", b.Epoch)

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
