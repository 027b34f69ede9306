// Command benchmarks measures this machine's durable-write limits, Sluice
// (one broker; three brokers with RF=3) and NATS JetStream (fsync always;
// default sync) with one load generator, and writes RESULTS.md, a PNG chart
// and the raw results.json. See README.md in this directory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicemq/sluice/client"
)

var (
	verbose, timeline bool
	extraBrokerFlags  []string
	keepDirs          bool   // -keep: leave data and logs behind
	clientFrom        string // commit the client code was compiled from; "" for the work tree
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func vlogf(format string, args ...any) {
	if verbose {
		logf(format, args...)
	}
}

// systemSpec is one system under test.
type systemSpec struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Desc  string `json:"desc"`
}

var allSystems = []systemSpec{
	{"sluice-1", "Sluice, 1 broker", "one broker, acks=1 (answered after the leader's fsync)"},
	{"sluice-1-dialback", "Sluice, 1 broker, dial-back", "sluice-1 with client.Sessions(false): answers over connections the broker opens to the client"},
	{"sluice-3", "Sluice, 3 brokers", "three brokers + Consul, RF=3, acks=all, min.insync.replicas=2"},
	{"sluice-kafka-1", "Sluice via Kafka, 1 broker", "one broker's Kafka listener, franz-go client, acks=1 (answered after the leader's fsync)"},
	{"kfake", "kfake (franz-go)", "franz-go's in-memory kfake broker in the harness process, franz-go client, acks=1 (no disk)"},
	{"nats-always", "NATS, sync always", "JetStream file store, R1, sync_interval: always (fsync every write)"},
	{"nats-default", "NATS, default sync", "JetStream file store, R1, default sync_interval (fsync every 2 min)"},
	{"nats-3", "NATS, 3 servers", "JetStream cluster of 3, file store, R3, default sync_interval (acknowledged once a majority has it, fsync every 2 min)"},
	{"nats-3-always", "NATS, 3 servers, sync always", "JetStream cluster of 3, file store, R3, sync_interval: always (each server fsyncs every write)"},
}

type options struct {
	Runs        int           `json:"runs"`
	Systems     []string      `json:"systems"`
	Sizes       []int         `json:"sizes"`
	Records     []int         `json:"records"` // per size
	LatSizes    []int         `json:"latency_sizes"`
	Rates       []int         `json:"rates"`
	LatDuration time.Duration `json:"latency_duration"`
	LatWarmup   time.Duration `json:"latency_warmup"`
	Window      int           `json:"window"`
	MaxPhase    time.Duration `json:"max_phase"`
	DDMiB       int           `json:"dd_mib"`
	DDRuns      int           `json:"dd_runs"`
	FsyncFor    time.Duration `json:"fsync_for"`
	FsyncBlock  int           `json:"fsync_block"`
	SluiceRev   string        `json:"sluice_rev"`
	Linger      time.Duration `json:"sluice_linger"`
	BatchBytes  int           `json:"sluice_batch_bytes"`
	MaxInFlight int           `json:"sluice_max_in_flight"`
	NATSVersion string        `json:"nats_version"`
	Phases      []string      `json:"phases"`
	Quick       bool          `json:"quick"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
}

func run() error {
	o := options{}
	fs := flag.NewFlagSet("benchmarks", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go -C benchmarks run . [flags]   (or benchmarks/run.sh [flags])\n\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.Runs, "runs", 3, "runs per system (medians and min-max over these)")
	systems := fs.String("systems", "sluice-1,sluice-kafka-1,kfake,sluice-3,nats-always,nats-default,nats-3,nats-3-always", "systems to measure, in order")
	sizes := fs.String("sizes", "100,1024", "record sizes (bytes) of the throughput runs")
	records := fs.String("records", "1000000,500000", "records per throughput run, one per size (the last repeats)")
	latSizes := fs.String("latency-sizes", "1024", "record sizes of the latency runs")
	rates := fs.String("rates", "1000,10000,50000", "fixed send rates (records/s) of the latency runs")
	fs.DurationVar(&o.LatDuration, "latency-duration", 5*time.Second, "recorded time per latency run")
	fs.DurationVar(&o.LatWarmup, "latency-warmup", time.Second, "time sent at the rate before recording starts")
	fs.IntVar(&o.Window, "window", 8192, "most unacknowledged records of a producer, for every system")
	phases := fs.String("phases", "produce,consume,latency", "measurements to run (consume reads what produce wrote)")
	fs.DurationVar(&o.MaxPhase, "max-phase", 15*time.Second, "time cap of one produce run (records/s is measured over what was sent)")
	fs.IntVar(&o.DDMiB, "dd-mib", 1024, "MiB written by each dd run")
	fs.IntVar(&o.DDRuns, "disk-runs", 3, "runs of dd and of the fsync loop")
	fs.DurationVar(&o.FsyncFor, "fsync-for", 3*time.Second, "length of one write+fdatasync loop")
	fs.IntVar(&o.FsyncBlock, "fsync-block", 4096, "bytes per write of the fsync loop")
	fs.StringVar(&o.SluiceRev, "sluice-rev", "HEAD", "git revision of the broker to build, or \"worktree\" for the files as they are")
	fs.DurationVar(&o.Linger, "sluice-linger", 0, "producer linger of Sluice's client and franz-go (default 0, Sluice's client default: a request goes out at once while none is in flight, and records batch while one is)")
	fs.IntVar(&o.BatchBytes, "sluice-batch-bytes", 1<<20, "Sluice producer batch size (client default 1 MiB)")
	fs.IntVar(&o.MaxInFlight, "sluice-max-in-flight", 5, "Sluice produce requests in flight per partition (client default 5)")
	fs.StringVar(&o.NATSVersion, "nats-version", "2.15.2", "nats-server version to build and run")
	fs.BoolVar(&o.Quick, "quick", false, "a short smoke run: fewer records, 2 s latency runs, 256 MiB dd (about 4 minutes; partitions suite: less data, 10 s idle, about 3-4 minutes; tls suite: fewer records, 2 runs, 2 s latency runs, about 2-3 minutes)")
	brokerFlags := fs.String("broker-flags", "", "extra flags for every sluice broker process, e.g. \"--http 127.0.0.1:6060\"")
	clientRev := fs.String("client-rev", "", "set by run.sh: the commit the harness's Sluice client was compiled from (default: the work tree)")
	consulBin := fs.String("consul-bin", "", "consul binary (default: $SLUICE_CONSUL_BIN, the .ci/install-consul.sh cache, or consul on PATH)")
	baseDir := fs.String("dir", "", "directory for data, logs and builds (default: a new temp dir, removed at exit)")
	keep := fs.Bool("keep", false, "keep the data and server logs of every run (in the temp dir or -dir)")
	outDir := fs.String("out", "", "where RESULTS.md, results.png and results.json go (partitions suite: RESULTS.md's partitions section and results-partitions.json; tls suite: its section and results-tls.json; default: this benchmarks directory)")
	reportOnly := fs.String("report", "", "only regenerate RESULTS.md and the PNG from this results.json (with -suite partitions: the partitions section from results-partitions.json; with -suite tls: the TLS section from results-tls.json)")
	timeout := fs.Duration("timeout", 40*time.Minute, "stop everything after this long (partitions suite: 25m; tls suite: 20m)")
	fs.BoolVar(&verbose, "v", false, "log every process started")
	fs.BoolVar(&timeline, "timeline", false, "log, per latency run, when (in the schedule) acks were slow")
	moveMiB := fs.Int("move-mib", 1024, "move suite: MiB in the partition moved (quick: 256)")
	moveThrottle := fs.Int64("move-throttle", 50_000_000, "move suite: the throttle of the second move, bytes per second")
	pf := addPartitionFlags(fs)
	tf := addTLSFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var po partOptions
	var to tlsOptions
	switch *pf.suite {
	case "default":
	case "partitions":
		var err error
		if po, err = pf.options(set, o.Quick, o.SluiceRev, o.Linger, o.BatchBytes, o.MaxInFlight); err != nil {
			return err
		}
		if !set["timeout"] {
			*timeout = 25 * time.Minute
		}
	case "tls":
		if !set["timeout"] {
			*timeout = 20 * time.Minute
		}
	case "metrics":
		if !set["timeout"] {
			*timeout = 15 * time.Minute
		}
	case "move":
		if !set["timeout"] {
			*timeout = 15 * time.Minute
		}
		if o.Quick && !set["move-mib"] {
			*moveMiB = 256
		}
	default:
		return fmt.Errorf("-suite: unknown %q (want default, partitions, tls, metrics or move)", *pf.suite)
	}
	if o.Quick {
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("records", func() { *records = "200000,100000" })
		def("latency-duration", func() { o.LatDuration = 2 * time.Second })
		def("latency-warmup", func() { o.LatWarmup = 500 * time.Millisecond })
		def("max-phase", func() { o.MaxPhase = 8 * time.Second })
		def("dd-mib", func() { o.DDMiB = 256 })
		def("fsync-for", func() { o.FsyncFor = time.Second })
	}
	var err error
	if o.Sizes, err = parseInts(*sizes); err != nil {
		return fmt.Errorf("-sizes: %w", err)
	}
	if o.Records, err = parseInts(*records); err != nil {
		return fmt.Errorf("-records: %w", err)
	}
	if o.LatSizes, err = parseInts(*latSizes); err != nil {
		return fmt.Errorf("-latency-sizes: %w", err)
	}
	if o.Rates, err = parseInts(*rates); err != nil {
		return fmt.Errorf("-rates: %w", err)
	}
	for _, ph := range strings.Split(*phases, ",") {
		switch ph = strings.TrimSpace(ph); ph {
		case "produce", "consume", "latency":
			o.Phases = append(o.Phases, ph)
		case "":
		default:
			return fmt.Errorf("-phases: unknown %q (want produce, consume, latency)", ph)
		}
	}
	for _, s := range strings.Split(*systems, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.ContainsFunc(allSystems, func(x systemSpec) bool { return x.Name == s }) {
			return fmt.Errorf("-systems: unknown %q (want sluice-1, sluice-1-dialback, sluice-3, sluice-kafka-1, kfake, nats-always, nats-default, nats-3, nats-3-always)", s)
		}
		o.Systems = append(o.Systems, s)
	}
	if o.Runs < 1 || o.Window < 1 || len(o.Systems) == 0 {
		return errors.New("need -runs >= 1, -window >= 1 and at least one system")
	}
	for _, s := range o.LatSizes {
		if s < 8 {
			return fmt.Errorf("-latency-sizes: %d is below the 8-byte timestamp", s)
		}
	}

	root, err := repoRoot()
	if err != nil {
		return err
	}
	if *outDir == "" {
		*outDir = filepath.Join(root, "benchmarks")
	}
	if *pf.suite == "tls" {
		if to, err = tf.options(set, o); err != nil {
			return err
		}
	}
	if *reportOnly != "" && *pf.suite == "tls" {
		var rep tlsReport
		b, err := os.ReadFile(*reportOnly)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return err
		}
		return writeTLSOutputs(&rep, *outDir, false)
	}
	if *reportOnly != "" && *pf.suite == "partitions" {
		var rep partReport
		b, err := os.ReadFile(*reportOnly)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return err
		}
		return writePartitionOutputs(&rep, *outDir, false)
	}
	if *reportOnly != "" {
		var rep report
		b, err := os.ReadFile(*reportOnly)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return err
		}
		return writeOutputs(&rep, *outDir, false)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-ctx.Done()
		stopSignals() // a second Ctrl-C kills the harness outright
	}()

	base := *baseDir
	if base == "" {
		if base, err = os.MkdirTemp("", "sluice-bench-"); err != nil {
			return err
		}
		if !*keep {
			defer os.RemoveAll(base)
		}
	} else if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	defer stopAll()
	defer client.Shutdown()
	extraBrokerFlags = strings.Fields(*brokerFlags)
	clientFrom, keepDirs = *clientRev, *keep
	if *pf.suite == "partitions" {
		return runPartitions(ctx, po, root, base, *consulBin, *outDir)
	}
	if *pf.suite == "tls" {
		return runTLS(ctx, to, root, base, *consulBin, *outDir)
	}
	if *pf.suite == "metrics" {
		return runMetrics(ctx, o, root, base, *outDir)
	}
	if *pf.suite == "move" {
		return runMove(ctx, o, *moveMiB, *moveThrottle, root, base, *consulBin, *outDir)
	}

	rep := &report{Options: o, Started: time.Now(), Command: commandLine()}
	for _, n := range o.Systems {
		for _, s := range allSystems {
			if s.Name == n {
				rep.Systems = append(rep.Systems, s)
			}
		}
	}
	rep.Machine = machineInfo(base)
	rep.LoadAvg = loadAvg()
	err = benchmark(ctx, rep, root, base, *consulBin)
	rep.Finished = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted (%v); nothing written", context.Cause(ctx))
		}
		return err
	}
	logf("done in %s", rep.Finished.Sub(rep.Started).Round(time.Second))
	return writeOutputs(rep, *outDir, true)
}

func benchmark(ctx context.Context, rep *report, root, base, consulFlag string) error {
	o := rep.Options
	cache := os.Getenv("SLUICE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		cache = filepath.Join(home, ".cache", "sluice")
	}
	buildDir := filepath.Join(base, "build")
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return err
	}

	// Builds first, so a missing tool fails before anything is measured.
	logf("building sluice (%s) ...", o.SluiceRev)
	sb, err := buildSluice(ctx, root, o.SluiceRev, buildDir)
	if err != nil {
		return err
	}
	rep.Sluice = sluiceInfo{Rev: sb.rev, Commit: sb.commit, Subject: sb.subject, ClientDirty: sb.dirty, ClientRev: clientFrom}
	if clientFrom != "" {
		rep.Sluice.ClientDirty = ""
	} else if sb.dirty != "" && sb.rev != "worktree" {
		logf("note: the harness's Sluice client is compiled from the work tree, which differs from %s in:\n%s", sb.commit[:12], sb.dirty)
	}
	var natsBin, consulBin string
	if slices.ContainsFunc(o.Systems, func(s string) bool { return strings.HasPrefix(s, "nats") }) {
		if natsBin, err = natsServer(ctx, cache, o.NATSVersion); err != nil {
			return err
		}
		out, _ := runCmd(ctx, "", nil, natsBin, "--version")
		rep.NATS.Server = strings.TrimSpace(out)
	}
	rep.NATS.Client = moduleVersion("github.com/nats-io/nats.go")
	rep.Hdr = moduleVersion("github.com/HdrHistogram/hdrhistogram-go")
	if slices.Contains(o.Systems, "sluice-3") {
		if consulBin, err = findConsul(consulFlag); err != nil {
			return err
		}
	}
	rep.GoVersion = goVersion(ctx)

	// The machine's limits.
	diskDir := filepath.Join(base, "disk")
	if err := os.MkdirAll(diskDir, 0o755); err != nil {
		return err
	}
	for i := range o.DDRuns {
		mbps, err := runDD(ctx, diskDir, o.DDMiB)
		if err != nil {
			return err
		}
		rep.Disk.DD = append(rep.Disk.DD, mbps)
		fr, err := fsyncLoop(ctx, diskDir, o.FsyncBlock, o.FsyncFor)
		if err != nil {
			return err
		}
		rep.Disk.Fsync = append(rep.Disk.Fsync, fr.PerSec)
		rep.Disk.FsyncRuns = append(rep.Disk.FsyncRuns, fr)
		logf("disk %d/%d: dd %.0f MB/s; %d B write+fdatasync %.0f/s (each: p50 %.2f ms, p99 %.2f ms, max %.2f ms)",
			i+1, o.DDRuns, mbps, o.FsyncBlock, fr.PerSec, fr.P50, fr.P99, fr.Max)
	}
	rep.Disk.DDCommand = "dd " + strings.Join(ddArgs("F", o.DDMiB), " ")

	for run := 1; run <= o.Runs; run++ {
		for _, sys := range o.Systems {
			dir := filepath.Join(base, fmt.Sprintf("run%d-%s", run, sys))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			t0 := time.Now()
			c0 := takeCPU()
			if err := runSystem(ctx, rep, sys, run, dir, sb.bin, natsBin, consulBin); err != nil {
				return fmt.Errorf("%s run %d: %w", sys, run, err)
			}
			other := otherCPU(c0, takeCPU(), rep.Machine.CPUs)
			rep.Load = append(rep.Load, loadSample{System: sys, Run: run, Seconds: time.Since(t0).Seconds(), OtherCPU: other})
			logf("[run %d/%d] %s took %s; other processes used %.0f%% of the CPUs meanwhile", run, o.Runs, sys,
				time.Since(t0).Round(100*time.Millisecond), 100*other)
			if !keepDirs {
				if err := os.RemoveAll(dir); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runSystem starts one system fresh, runs every measurement on it and stops it.
func runSystem(ctx context.Context, rep *report, sys string, run int, dir, sluiceBin, natsBin, consulBin string) error {
	o := rep.Options
	var t target
	var stop func()
	var commands []string
	var config string
	switch sys {
	case "sluice-1", "sluice-1-dialback", "sluice-3":
		var c *sluiceCluster
		var err error
		acks, rf, configs := client.LeaderAck, int32(1), map[string]string(nil)
		opts := sluiceOptions{linger: o.Linger, batchBytes: o.BatchBytes, maxInFlight: o.MaxInFlight}
		if sys == "sluice-1-dialback" {
			opts.security = []client.Opt{client.Sessions(false)}
		}
		if sys != "sluice-3" {
			c, err = startSluiceSingle(ctx, sluiceBin, dir)
		} else {
			c, err = startSluiceCluster(ctx, sluiceBin, consulBin, dir, 3)
			acks, rf, configs = client.AllAcks, 3, map[string]string{"min.insync.replicas": "2"}
		}
		if err != nil {
			return err
		}
		st, err := newSluiceTarget(c.addrs, acks, rf, configs, opts)
		if err != nil {
			c.stop()
			return err
		}
		t, stop, commands = st, func() { st.close(); c.stop() }, c.commands
		config = fmt.Sprintf("topic: 1 partition, RF %d%s; producer: acks=%s, linger %s, batch %d B, %d requests in flight",
			rf, map[bool]string{true: ", min.insync.replicas=2", false: ""}[rf == 3],
			map[bool]string{true: "all", false: "1"}[rf == 3], o.Linger, o.BatchBytes, o.MaxInFlight)
	case "sluice-kafka-1":
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		kafkaAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
		c, err := startSluiceSingleWith(ctx, sluiceBin, dir, []string{"--kafka-addr", kafkaAddr})
		if err != nil {
			return err
		}
		kt, err := newKafkaTarget([]string{kafkaAddr}, kgo.LeaderAck(), 1, nil, o.Linger, o.BatchBytes)
		if err != nil {
			c.stop()
			return err
		}
		t, stop, commands = kt, func() { kt.close(); c.stop() }, c.commands
		config = fmt.Sprintf("topic: 1 partition, RF 1; franz-go producer: acks=1, linger %s, batch %d B, no compression; consumer: franz-go", o.Linger, o.BatchBytes)
	case "kfake":
		kc, addr, err := startKfake()
		if err != nil {
			return err
		}
		kt, err := newKafkaTarget([]string{addr}, kgo.LeaderAck(), 1, nil, o.Linger, o.BatchBytes)
		if err != nil {
			kc.Close()
			return err
		}
		t, stop, commands = kt, func() { kt.close(); kc.Close() }, []string{"kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(P)) in the harness process"}
		config = fmt.Sprintf("in-memory, no fsync; franz-go producer: acks=1, linger %s, batch %d B, no compression", o.Linger, o.BatchBytes)
	case "nats-always", "nats-default", "nats-3", "nats-3-always":
		var d *natsDeployment
		var err error
		always := strings.HasSuffix(sys, "-always")
		if strings.HasPrefix(sys, "nats-3") {
			d, err = startNATSCluster(ctx, natsBin, dir, 3, always)
		} else {
			d, err = startNATS(ctx, natsBin, dir, always)
		}
		if err != nil {
			return err
		}
		nt, err := newNATSTarget(d.url, d.replicas)
		if err != nil {
			d.stop()
			return err
		}
		t, stop, commands = nt, func() { nt.close(); d.stop() }, []string{d.command}
		config = fmt.Sprintf("nats.conf (of the first server):\n%sstream: file storage, %d replica(s), limits retention; publisher: jetstream.PublishAsync, "+
			"WithPublishAsyncMaxPending(window); consumer: ordered consumer (Consume)", d.config, d.replicas)
	}
	defer stop()
	if run == 1 {
		rep.Commands = append(rep.Commands, commandSet{System: sys, Commands: commands, Config: config})
	}
	lc := loadConfig{window: o.Window, maxPhase: o.MaxPhase}
	add := func(r result) {
		r.System, r.Run = sys, run
		rep.Results = append(rep.Results, r)
		logf("[run %d/%d] %s", run, o.Runs, r.summary())
	}
	for i, size := range o.Sizes {
		if !slices.Contains(o.Phases, "produce") {
			break
		}
		n := o.Records[min(i, len(o.Records)-1)]
		topic := fmt.Sprintf("tp-%d", size)
		if err := t.createTopic(ctx, topic); err != nil {
			return err
		}
		lc.seed = uint64(run*100000 + size)
		cpu0 := takeCPUSplit()
		p := runProduce(ctx, t, topic, size, n, lc)
		if cpu1, gb := takeCPUSplit(), float64(p.Records)*float64(size)/1e9; gb > 0 {
			p.ServerCPUPerGB, p.HarnessCPUPerGB = (cpu1.servers-cpu0.servers)/gb, (cpu1.harness-cpu0.harness)/gb
		}
		add(p)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p.Records > 0 && slices.Contains(o.Phases, "consume") {
			add(runConsume(ctx, t, topic, size, p.Records, lc))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := t.deleteTopic(ctx, topic); err != nil {
			vlogf("delete %s: %v", topic, err)
		}
	}
	for _, size := range o.LatSizes {
		if !slices.Contains(o.Phases, "latency") {
			break
		}
		for _, rate := range o.Rates {
			topic := fmt.Sprintf("lat-%d-%d", size, rate)
			if err := t.createTopic(ctx, topic); err != nil {
				return err
			}
			lc.seed = uint64(run*100000 + size + rate)
			add(runLatency(ctx, t, topic, size, latencyConfig{loadConfig: lc, rate: rate,
				warmup: o.LatWarmup, duration: o.LatDuration, drain: 15 * time.Second, timeline: timeline}))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := t.deleteTopic(ctx, topic); err != nil {
				vlogf("delete %s: %v", topic, err)
			}
		}
	}
	return nil
}

func (r result) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %d B", r.System, r.Kind, r.Size)
	switch r.Kind {
	case "latency":
		fmt.Fprintf(&b, " @ %d/s: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms; ack p50 %.2f, p99 %.2f ms (sent %d/%d at %.0f/s, got %d)",
			r.Rate, r.P50, r.P99, r.P999, r.Max, r.AckP50, r.AckP99, r.Sent, r.Wanted, r.Achieved, r.Records)
	default:
		fmt.Fprintf(&b, ": %d records in %.2f s = %.0f records/s, %.1f MB/s", r.Records, r.Seconds, r.RecsPerSec, r.MBPerSec)
		if r.ServerCPUPerGB > 0 || r.HarnessCPUPerGB > 0 {
			fmt.Fprintf(&b, "; CPU s/GB: servers %.1f, harness %.1f", r.ServerCPUPerGB, r.HarnessCPUPerGB)
		}
	}
	if r.Capped {
		b.WriteString(" [time cap]")
	}
	if r.Failed > 0 || r.Missing > 0 {
		fmt.Fprintf(&b, " [failed %d, missing %d]", r.Failed, r.Missing)
	}
	if r.Err != "" {
		fmt.Fprintf(&b, " ERROR: %s", r.Err)
	}
	return b.String()
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q: empty", s)
	}
	return out, nil
}

// repoRoot is the Sluice repository containing the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/sluicemq/sluice\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("not inside the Sluice repository (from %s)", dir)
		}
	}
}

func commandLine() string {
	var args []string
	skip := false
	for _, a := range os.Args[1:] {
		// run.sh's own plumbing is not part of the command a person types.
		if skip {
			skip = false
			continue
		}
		if a == "-client-rev" || a == "-sluice-rev" && os.Getenv("SLUICE_BENCH_CMD") != "" {
			skip = true
			continue
		}
		args = append(args, a)
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if strings.ContainsAny(a, " \t'\"") {
			q[i] = strconv.Quote(a)
		}
	}
	prefix := "go -C benchmarks run ."
	if c := os.Getenv("SLUICE_BENCH_CMD"); c != "" {
		prefix = c
	}
	return strings.TrimSpace(prefix + " " + strings.Join(q, " "))
}

func goVersion(ctx context.Context) string {
	if out, err := runCmd(ctx, "", nil, "go", "version"); err == nil {
		return strings.TrimSpace(out)
	}
	return runtime.Version()
}
