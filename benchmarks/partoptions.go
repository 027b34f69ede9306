package main

// The partitions suite's deployments, scales and flags.

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/client"
)

// deployment is one way of running Sluice in the partitions suite.
type deployment struct {
	Name    string            `json:"name"`
	Label   string            `json:"label"`
	Brokers int               `json:"brokers"`
	RF      int32             `json:"rf"`
	Acks    string            `json:"acks"`
	Configs map[string]string `json:"configs,omitempty"`
}

var allDeployments = []deployment{
	{Name: "single", Label: "1 broker", Brokers: 1, RF: 1, Acks: "1"},
	{Name: "rf3", Label: "3 brokers, RF=3", Brokers: 3, RF: 3, Acks: "all", Configs: map[string]string{"min.insync.replicas": "2"}},
}

func (d deployment) ackLevel() client.AckLevel {
	if d.Acks == "all" {
		return client.AllAcks
	}
	return client.LeaderAck
}

// scale is what one deployment is asked to do.
type scale struct {
	Counts            []int `json:"partition_counts"`
	ProduceBytes      int64 `json:"produce_bytes"`
	MemPartitions     int   `json:"memory_partitions"`
	MemBytes          int64 `json:"memory_bytes_per_partition"`
	RestartPartitions int   `json:"restart_partitions"`
	RestartBytes      int64 `json:"restart_bytes_per_partition"`
}

type partOptions struct {
	Deployments    []string         `json:"deployments"`
	Measurements   []string         `json:"measurements"`
	Runs           int              `json:"runs"` // produce runs per partition count
	RecordSize     int              `json:"record_size"`
	Scale          map[string]scale `json:"scale"` // by deployment
	MaxPhase       time.Duration    `json:"max_phase"`
	MemRun         int              `json:"memory_run_records"`
	Idle           time.Duration    `json:"idle"`
	LogMemoryBytes int64            `json:"log_memory_bytes"`
	RestartTimeout time.Duration    `json:"restart_timeout"`
	// Client settings set by flags; zero: the client's default.
	Linger      time.Duration `json:"sluice_linger,omitempty"`
	BatchBytes  int           `json:"sluice_batch_bytes,omitempty"`
	MaxInFlight int           `json:"sluice_max_in_flight,omitempty"`
	BufferBytes int64         `json:"sluice_buffer_bytes,omitempty"`
	SluiceRev   string        `json:"sluice_rev"`
	Quick       bool          `json:"quick"`
}

// byteSize is a flag value in bytes: 1048576, 1MiB, 64KiB, 1GiB.
type byteSize int64

func (b *byteSize) String() string { return fmtBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 1 {
		return fmt.Errorf("%q: want a positive size such as 65536, 64KiB, 4MiB or 1GiB", s)
	}
	*b = byteSize(n * mult)
	return nil
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// partFlags are the partitions suite's flags, registered on the harness's
// flag set.
type partFlags struct {
	suite                                    *string
	deployments, measurements                *string
	runs, recordSize, memRun                 *int
	counts, rf3Counts                        *string
	produceBytes, rf3ProduceBytes            byteSize
	memPartitions, rf3MemPartitions          *int
	memBytes, rf3MemBytes                    byteSize
	restartPartitions, rf3RestartPartitions  *int
	restartBytes, rf3RestartBytes, logMemory byteSize
	bufferBytes                              byteSize
	maxPhase, idle, restartTimeout           *time.Duration
}

func addPartitionFlags(fs *flag.FlagSet) *partFlags {
	f := &partFlags{produceBytes: 1 << 30, rf3ProduceBytes: 512 << 20, memBytes: 4 << 20, rf3MemBytes: 4 << 20,
		restartBytes: 64 << 10, rf3RestartBytes: 64 << 10, logMemory: 512 << 20}
	f.suite = fs.String("suite", "default", "\"default\" (disk, Sluice, NATS), \"partitions\" (how Sluice scales with partitions; flags below), \"tls\" (produce with TLS off and on; -tls-* flags), \"metrics\" (produce with and without a scraper; scrape time with 1,000 partitions) or \"move\" (moving a partition between brokers, with and without a throttle; -move-* flags)")
	f.deployments = fs.String("deployments", "single,rf3", "partitions suite: single (1 broker, acks=1) and/or rf3 (3 brokers + Consul, RF=3, acks=all)")
	f.measurements = fs.String("measurements", "produce,memory,restart", "partitions suite: measurements to run")
	f.runs = fs.Int("partition-runs", 1, "partitions suite: produce runs per partition count (medians and min-max over these)")
	f.recordSize = fs.Int("record-size", 1024, "partitions suite: record size in bytes")
	f.counts = fs.String("partition-counts", "1,10,100,1000", "partitions suite: partition counts of the one-broker produce runs")
	fs.Var(&f.produceBytes, "partition-bytes", "partitions suite: bytes of values produced per one-broker produce run (quick: 256MiB)")
	f.rf3Counts = fs.String("rf3-partition-counts", "1,10,100,300", "partitions suite: partition counts of the RF=3 produce runs")
	fs.Var(&f.rf3ProduceBytes, "rf3-partition-bytes", "partitions suite: bytes per RF=3 produce run (quick: 128MiB)")
	f.memPartitions = fs.Int("memory-partitions", 1000, "partitions suite: partitions of the one-broker memory measurement")
	fs.Var(&f.memBytes, "memory-bytes", "partitions suite: bytes written into each partition before memory is read (quick: 1MiB)")
	f.rf3MemPartitions = fs.Int("rf3-memory-partitions", 300, "partitions suite: partitions of the RF=3 memory measurement")
	fs.Var(&f.rf3MemBytes, "rf3-memory-bytes", "partitions suite: bytes into each RF=3 partition (quick: 1MiB)")
	f.memRun = fs.Int("memory-run", 256, "partitions suite: consecutive records sent to one partition before the next (memory and restart data)")
	f.idle = fs.Duration("idle", 60*time.Second, "partitions suite: idle time before memory is read again (quick: 10s)")
	fs.Var(&f.logMemory, "log-memory-bytes", "partitions suite: passed to every broker as --log-memory-bytes when the broker accepts that flag")
	f.restartPartitions = fs.Int("restart-partitions", 2000, "partitions suite: partitions of the one-broker restart measurement")
	fs.Var(&f.restartBytes, "restart-bytes", "partitions suite: bytes in each partition before the restart (quick: 16KiB)")
	f.rf3RestartPartitions = fs.Int("rf3-restart-partitions", 600, "partitions suite: partitions of the RF=3 restart measurement")
	fs.Var(&f.rf3RestartBytes, "rf3-restart-bytes", "partitions suite: bytes in each RF=3 partition before the restart (quick: 16KiB)")
	fs.Var(&f.bufferBytes, "sluice-buffer-bytes", "partitions suite: producer MaxBufferedBytes (default: the client's, 64 MiB)")
	f.maxPhase = fs.Duration("partition-max-phase", 60*time.Second, "partitions suite: time cap of one produce or write phase (measured over what was acknowledged; quick: 20s)")
	f.restartTimeout = fs.Duration("restart-timeout", 90*time.Second, "partitions suite: longest wait, from a restart, for every partition serving, every ISR full and every high watermark back (quick: 30s)")
	return f
}

// options turns the flags into partOptions; set holds the flags given.
func (f *partFlags) options(set map[string]bool, quick bool, rev string, linger time.Duration, batch, inFlight int) (partOptions, error) {
	if quick {
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("partition-bytes", func() { f.produceBytes = 256 << 20 })
		def("rf3-partition-bytes", func() { f.rf3ProduceBytes = 128 << 20 })
		def("memory-bytes", func() { f.memBytes = 1 << 20 })
		def("rf3-memory-bytes", func() { f.rf3MemBytes = 1 << 20 })
		def("idle", func() { *f.idle = 10 * time.Second })
		def("restart-timeout", func() { *f.restartTimeout = 30 * time.Second })
		def("partition-max-phase", func() { *f.maxPhase = 20 * time.Second })
		def("restart-bytes", func() { f.restartBytes = 16 << 10 })
		def("rf3-restart-bytes", func() { f.rf3RestartBytes = 16 << 10 })
	}
	o := partOptions{Runs: *f.runs, RecordSize: *f.recordSize, MaxPhase: *f.maxPhase, MemRun: *f.memRun, Idle: *f.idle,
		LogMemoryBytes: int64(f.logMemory), RestartTimeout: *f.restartTimeout, SluiceRev: rev, Quick: quick,
		Scale: map[string]scale{}}
	for _, d := range strings.Split(*f.deployments, ",") {
		switch d = strings.TrimSpace(d); d {
		case "single", "rf3":
			if !slices.Contains(o.Deployments, d) {
				o.Deployments = append(o.Deployments, d)
			}
		case "":
		default:
			return o, fmt.Errorf("-deployments: unknown %q (want single, rf3)", d)
		}
	}
	for _, m := range strings.Split(*f.measurements, ",") {
		switch m = strings.TrimSpace(m); m {
		case "produce", "memory", "restart":
			if !slices.Contains(o.Measurements, m) {
				o.Measurements = append(o.Measurements, m)
			}
		case "":
		default:
			return o, fmt.Errorf("-measurements: unknown %q (want produce, memory, restart)", m)
		}
	}
	if len(o.Deployments) == 0 || len(o.Measurements) == 0 {
		return o, errors.New("-deployments and -measurements must each name at least one")
	}
	if o.Runs < 1 || o.MemRun < 1 || o.RecordSize < 16 || o.RecordSize > 512<<10 {
		return o, errors.New("need -partition-runs >= 1, -memory-run >= 1 and -record-size from 16 to 512 KiB")
	}
	counts, err := parseInts(*f.counts)
	if err != nil {
		return o, fmt.Errorf("-partition-counts: %w", err)
	}
	rf3Counts, err := parseInts(*f.rf3Counts)
	if err != nil {
		return o, fmt.Errorf("-rf3-partition-counts: %w", err)
	}
	o.Scale["single"] = scale{Counts: counts, ProduceBytes: int64(f.produceBytes), MemPartitions: *f.memPartitions,
		MemBytes: int64(f.memBytes), RestartPartitions: *f.restartPartitions, RestartBytes: int64(f.restartBytes)}
	o.Scale["rf3"] = scale{Counts: rf3Counts, ProduceBytes: int64(f.rf3ProduceBytes), MemPartitions: *f.rf3MemPartitions,
		MemBytes: int64(f.rf3MemBytes), RestartPartitions: *f.rf3RestartPartitions, RestartBytes: int64(f.rf3RestartBytes)}
	for name, s := range o.Scale {
		if s.MemPartitions < 1 || s.RestartPartitions < 1 {
			return o, fmt.Errorf("%s: memory and restart partitions must be >= 1", name)
		}
	}
	if set["sluice-linger"] {
		o.Linger = linger
	}
	if set["sluice-batch-bytes"] {
		o.BatchBytes = batch
	}
	if set["sluice-max-in-flight"] {
		o.MaxInFlight = inFlight
	}
	o.BufferBytes = int64(f.bufferBytes)
	return o, nil
}
