package main

// The partitions suite (-suite partitions): how Sluice scales with the
// number of partitions, on one broker and on three brokers with RF=3.
// Three measurements, each on servers started fresh (fresh data dirs,
// free ports on 127.0.0.1, every server in its own process group):
//
//   - produce throughput for topics of 1, 10, 100, 1,000 partitions, the
//     same bytes each, records without keys spread by the client's default
//     partitioner;
//   - the broker's resident memory after writing a few MiB into each of
//     1,000 partitions, and again after it has been idle;
//   - restart time of a broker holding 2,000 partitions, after SIGTERM and
//     after kill -9: to its first metadata answer, and to every partition
//     having a leader that answers ListOffsets.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/client"
)

// ---- results ------------------------------------------------------------------

// memSample is a broker process's memory, read from /proc (bytes).
type memSample struct {
	RSS      int64  `json:"vm_rss"`
	HWM      int64  `json:"vm_hwm"`
	RssAnon  int64  `json:"rss_anon"`
	RssFile  int64  `json:"rss_file"`
	LazyFree int64  `json:"lazy_free"` // freed with MADV_FREE, not yet taken back by the kernel (counted in RSS)
	Err      string `json:"error,omitempty"`
}

type partProduce struct {
	Deployment string      `json:"deployment"`
	Run        int         `json:"run"`
	Partitions int         `json:"partitions"`
	Size       int         `json:"size"`
	Records    int64       `json:"records"` // acknowledged
	Sent       int64       `json:"sent"`
	Wanted     int64       `json:"wanted"`
	Seconds    float64     `json:"seconds"`
	RecsPerSec float64     `json:"records_per_s"`
	MBPerSec   float64     `json:"mb_per_s"`
	Failed     int64       `json:"failed,omitempty"`
	Capped     bool        `json:"capped,omitempty"`
	Brokers    []memSample `json:"broker_memory_after"`
	Err        string      `json:"error,omitempty"`
}

type brokerMemory struct {
	Broker     int       `json:"broker"` // 1-based
	Replicas   int       `json:"replicas"`
	AfterWrite memSample `json:"after_write"`
	AfterIdle  memSample `json:"after_idle"`
}

type partMemory struct {
	Deployment   string         `json:"deployment"`
	Partitions   int            `json:"partitions"`
	BytesPerPart int64          `json:"bytes_per_partition"`
	Records      int64          `json:"records"`
	Wanted       int64          `json:"wanted"`
	WriteSeconds float64        `json:"write_seconds"`
	MBPerSec     float64        `json:"write_mb_per_s"`
	IdleSeconds  float64        `json:"idle_seconds"`
	Brokers      []brokerMemory `json:"brokers"`
	Err          string         `json:"error,omitempty"`
}

type partRestart struct {
	Deployment   string    `json:"deployment"`
	Mode         string    `json:"mode"` // clean (SIGTERM) or unclean (kill -9)
	Partitions   int       `json:"partitions"`
	BytesPerPart int64     `json:"bytes_per_partition"`
	StopSeconds  []float64 `json:"stop_seconds,omitempty"` // SIGTERM to exit, per broker
	StopExit     []string  `json:"stop_exit,omitempty"`
	// From the (first) process start:
	ListenSeconds   float64 `json:"listen_seconds"`   // every broker accepts TCP connections
	ReadySeconds    float64 `json:"ready_seconds"`    // every broker logged "sluice broker ready"
	MetadataSeconds float64 `json:"metadata_seconds"` // (a) first metadata answer listing the topic's partitions
	ServingSeconds  float64 `json:"serving_seconds"`  // (b) every partition has a leader answering ListOffsets
	FullISRSeconds  float64 `json:"full_isr_seconds"` // (c) RF=3: every partition's ISR has every replica
	HWSeconds       float64 `json:"hw_seconds"`       // (d) every high watermark back to the records acknowledged before the stop
	Serving         int     `json:"serving"`          // partitions that answered ListOffsets
	HWChecked       int     `json:"hw_checked"`       // partitions whose high watermark was read at the end
	HWShort         int     `json:"hw_short"`         // of those, still below the records acknowledged when the restart timeout ended the wait
	RecordsShort    int64   `json:"records_short"`    // acknowledged records above the high watermarks then (not readable)
	RecordsPerPart  int64   `json:"records_per_partition"`
	Err             string  `json:"error,omitempty"`
}

type partLoad struct {
	Step         string  `json:"step"`
	Seconds      float64 `json:"seconds"`
	StartSeconds float64 `json:"start_seconds"` // starting the step's servers
	StopSeconds  float64 `json:"stop_seconds"`  // stopping them at its end
	OtherCPU     float64 `json:"other_cpu"`
}

type topicCreation struct {
	Deployment string  `json:"deployment"`
	Step       string  `json:"step"`
	Partitions int     `json:"partitions"`
	Seconds    float64 `json:"seconds"` // CreateTopic to every partition writable
}

type logMemoryInfo struct {
	Bytes    int64  `json:"bytes"`
	Accepted bool   `json:"accepted"` // the broker binary has --log-memory-bytes, so it was passed
	Note     string `json:"note"`
}

type partReport struct {
	Suite      string          `json:"suite"`
	Options    partOptions     `json:"options"`
	Command    string          `json:"command"`
	Started    time.Time       `json:"started"`
	Finished   time.Time       `json:"finished"`
	Machine    machine         `json:"machine"`
	LoadAvg    string          `json:"loadavg_at_start"`
	GoVersion  string          `json:"go"`
	Sluice     sluiceInfo      `json:"sluice"`
	LogMemory  logMemoryInfo   `json:"log_memory"`
	Client     string          `json:"client"`
	Deploys    []deployment    `json:"deployments"`
	Commands   []commandSet    `json:"commands"`
	Topics     []topicCreation `json:"topic_creation"`
	Produce    []partProduce   `json:"produce"`
	Memory     []partMemory    `json:"memory"`
	Restart    []partRestart   `json:"restart"`
	Load       []partLoad      `json:"load"`
	TotalBytes int64           `json:"bytes_written"`
}

// ---- running ------------------------------------------------------------------

type partSuite struct {
	o         partOptions
	rep       *partReport
	bin       string
	consulBin string
	base      string
	logger    *slog.Logger
	// The Consul agent of the RF=3 steps: one for all of them (its leader
	// election takes seconds), each step's brokers a cluster of their own.
	consulAddr, consulCmd string
}

// runPartitions runs the partitions suite and writes its outputs.
func runPartitions(ctx context.Context, o partOptions, root, base, consulFlag, outDir string) error {
	rep := &partReport{Suite: "partitions", Options: o, Started: time.Now(), Command: commandLine()}
	for _, n := range o.Deployments {
		for _, d := range allDeployments {
			if d.Name == n {
				rep.Deploys = append(rep.Deploys, d)
			}
		}
	}
	rep.Machine = machineInfo(base)
	rep.LoadAvg = loadAvg()
	s := &partSuite{o: o, rep: rep, base: base,
		logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	err := s.run(ctx, root, consulFlag)
	rep.Finished = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted (%v); nothing written", context.Cause(ctx))
		}
		return err
	}
	logf("done in %s", rep.Finished.Sub(rep.Started).Round(time.Second))
	return writePartitionOutputs(rep, outDir, true)
}

func (s *partSuite) run(ctx context.Context, root, consulFlag string) error {
	o, rep := s.o, s.rep
	buildDir := filepath.Join(s.base, "build")
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return err
	}
	logf("building sluice (%s) ...", o.SluiceRev)
	sb, err := buildSluice(ctx, root, o.SluiceRev, buildDir)
	if err != nil {
		return err
	}
	s.bin = sb.bin
	rep.Sluice = sluiceInfo{Rev: sb.rev, Commit: sb.commit, Subject: sb.subject, ClientDirty: sb.dirty, ClientRev: clientFrom}
	if clientFrom != "" {
		rep.Sluice.ClientDirty = ""
	}
	if slices.Contains(o.Deployments, "rf3") {
		if s.consulBin, err = findConsul(consulFlag); err != nil {
			return err
		}
	}
	rep.GoVersion = goVersion(ctx)

	// --log-memory-bytes goes to every broker if this binary has it.
	rep.LogMemory = logMemoryInfo{Bytes: o.LogMemoryBytes}
	help, _ := runCmd(ctx, "", nil, s.bin, "broker", "-h")
	if strings.Contains(help, "-log-memory-bytes") {
		rep.LogMemory.Accepted = true
		rep.LogMemory.Note = fmt.Sprintf("every broker ran with `--log-memory-bytes %d` (%s)", o.LogMemoryBytes, fmtBytes(o.LogMemoryBytes))
		extraBrokerFlags = append(extraBrokerFlags, "--log-memory-bytes", strconv.FormatInt(o.LogMemoryBytes, 10))
	} else {
		rep.LogMemory.Note = fmt.Sprintf("this broker binary has no --log-memory-bytes flag (not in `sluice broker -h`), so it was not passed; the idle goal is measured against the harness's %s all the same", fmtBytes(o.LogMemoryBytes))
		logf("note: %s", rep.LogMemory.Note)
	}
	rep.Client = s.clientDesc()

	for _, d := range rep.Deploys {
		if err := s.deployment(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// deployment runs every measurement on deployment d.
func (s *partSuite) deployment(ctx context.Context, d deployment) error {
	o, sc := s.o, s.o.Scale[d.Name]
	if d.Brokers > 1 {
		dir := filepath.Join(s.base, d.Name+"-consul")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cp, addr, cmd, err := startConsul(ctx, s.consulBin, dir)
		if err != nil {
			return err
		}
		defer func() {
			cp.stop(15 * time.Second)
			if !keepDirs {
				os.RemoveAll(dir)
			}
		}()
		s.consulAddr, s.consulCmd = addr, cmd
	}
	if slices.Contains(o.Measurements, "produce") {
		for run := 1; run <= o.Runs; run++ {
			for _, n := range sc.Counts {
				step := fmt.Sprintf("%s-produce-%d-run%d", d.Name, n, run)
				if err := s.step(ctx, d, step, func(c *sluiceCluster, dir string) error {
					return s.produce(ctx, d, c, run, n, sc.ProduceBytes)
				}); err != nil {
					return err
				}
			}
		}
	}
	if slices.Contains(o.Measurements, "memory") {
		if err := s.step(ctx, d, d.Name+"-memory", func(c *sluiceCluster, dir string) error {
			return s.memory(ctx, d, c, sc.MemPartitions, sc.MemBytes)
		}); err != nil {
			return err
		}
	}
	if slices.Contains(o.Measurements, "restart") {
		if err := s.step(ctx, d, d.Name+"-restart", func(c *sluiceCluster, dir string) error {
			return s.restart(ctx, d, c, dir, sc.RestartPartitions, sc.RestartBytes)
		}); err != nil {
			return err
		}
	}
	return nil
}

// step starts deployment d fresh in its own directory, runs fn on it, and
// stops and removes it.
func (s *partSuite) step(ctx context.Context, d deployment, name string, fn func(c *sluiceCluster, dir string) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Join(s.base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	t0, c0 := time.Now(), takeCPU()
	var c *sluiceCluster
	var err error
	if d.Brokers == 1 {
		c, err = startSluiceSingle(ctx, s.bin, dir)
	} else {
		c = &sluiceCluster{}
		if err = startSluiceBrokers(ctx, c, s.bin, s.consulAddr, name, dir, d.Brokers); err != nil {
			c.stop()
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !slices.ContainsFunc(s.rep.Commands, func(cs commandSet) bool { return cs.System == d.Name }) {
		cmds := c.commands
		if d.Brokers > 1 {
			cmds = append([]string{s.consulCmd}, cmds...)
		}
		s.rep.Commands = append(s.rep.Commands, commandSet{System: d.Name, Commands: cmds})
	}
	started := time.Since(t0)
	err = fn(c, dir)
	t1 := time.Now()
	c.stop()
	stopped := time.Since(t1)
	// A fresh client actor system for the next step: nothing it knew about
	// these brokers carries over.
	client.Shutdown()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	other := otherCPU(c0, takeCPU(), s.rep.Machine.CPUs)
	s.rep.Load = append(s.rep.Load, partLoad{Step: name, Seconds: time.Since(t0).Seconds(), OtherCPU: other,
		StartSeconds: started.Seconds(), StopSeconds: stopped.Seconds()})
	logf("[%s] took %s (starting the servers %s, stopping them %s); other processes used %.0f%% of the CPUs meanwhile", name,
		time.Since(t0).Round(100*time.Millisecond), started.Round(100*time.Millisecond), stopped.Round(100*time.Millisecond), 100*other)
	if !keepDirs {
		return os.RemoveAll(dir)
	}
	return nil
}

// brokers are the cluster's broker processes (after Consul, if any).
func brokers(c *sluiceCluster) []*proc { return c.procs[len(c.procs)-len(c.addrs):] }

func (s *partSuite) clientOpts(d deployment, extra ...client.ProducerOpt) []client.ProducerOpt {
	opts := []client.ProducerOpt{client.Acks(d.ackLevel()), client.WithLogger(s.logger)}
	if s.o.Linger > 0 {
		opts = append(opts, client.Linger(s.o.Linger))
	}
	if s.o.BatchBytes > 0 {
		opts = append(opts, client.BatchBytes(s.o.BatchBytes))
	}
	if s.o.MaxInFlight > 0 {
		opts = append(opts, client.MaxInFlight(s.o.MaxInFlight))
	}
	if s.o.BufferBytes > 0 {
		opts = append(opts, client.MaxBufferedBytes(s.o.BufferBytes))
	}
	return append(opts, extra...)
}

func (s *partSuite) clientDesc() string {
	var set []string
	if s.o.Linger > 0 {
		set = append(set, fmt.Sprintf("linger %s", s.o.Linger))
	}
	if s.o.BatchBytes > 0 {
		set = append(set, fmt.Sprintf("batch %s", fmtBytes(int64(s.o.BatchBytes))))
	}
	if s.o.MaxInFlight > 0 {
		set = append(set, fmt.Sprintf("%d requests in flight per partition", s.o.MaxInFlight))
	}
	if s.o.BufferBytes > 0 {
		set = append(set, fmt.Sprintf("buffer %s", fmtBytes(s.o.BufferBytes)))
	}
	desc := "one `client.Producer` with the client's defaults (no linger: records go out at once while none of the partition's requests is in flight and batch while one is; 1 MiB batches, 5 requests in flight per partition, 64 MiB buffer: the only bound on records in flight), acks=1 on one broker and acks=all (idempotent, the default with acks=all) on RF=3"
	if len(set) > 0 {
		desc += "; set by flags: " + strings.Join(set, ", ")
	}
	return desc
}

// createTopic creates topic with n partitions and waits until every
// partition has a leader and a full ISR.
func (s *partSuite) createTopic(ctx context.Context, d deployment, admin *client.Admin, step, topic string, n int) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	for {
		err := admin.CreateTopic(cctx, client.TopicSpec{Name: topic, Partitions: int32(n), ReplicationFactor: d.RF, Configs: d.Configs})
		if err == nil || errors.Is(err, client.ErrTopicAlreadyExists) {
			break
		}
		if cctx.Err() != nil {
			return fmt.Errorf("create topic %s (%d partitions): %w", topic, n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var last string
	for {
		mctx, mcancel := context.WithTimeout(cctx, 10*time.Second)
		md, err := admin.Metadata(mctx, topic)
		mcancel()
		if err == nil {
			ready, why := partitionsReady(md, topic, n, int(d.RF))
			if ready {
				secs := time.Since(t0).Seconds()
				s.rep.Topics = append(s.rep.Topics, topicCreation{Deployment: d.Name, Step: step, Partitions: n, Seconds: secs})
				vlogf("topic %s: %d partitions writable in %.2f s", topic, n, secs)
				return nil
			}
			last = why
		} else {
			last = err.Error()
		}
		if cctx.Err() != nil {
			return fmt.Errorf("topic %s not ready within 3 min: %s", topic, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// partitionsReady reports whether md shows topic with n partitions, each
// with a leader and at least isr replicas in sync.
func partitionsReady(md *client.Metadata, topic string, n, isr int) (bool, string) {
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if len(t.Partitions) != n {
			return false, fmt.Sprintf("%d of %d partitions in metadata (%v)", len(t.Partitions), n, t.Err)
		}
		noLeader, short := 0, 0
		for _, p := range t.Partitions {
			if p.Leader < 0 || p.Err != nil {
				noLeader++
			} else if len(p.ISR) < isr {
				short++
			}
		}
		if noLeader == 0 && short == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("%d partitions without a leader, %d with a short ISR", noLeader, short)
	}
	return false, "topic not in metadata"
}

func (s *partSuite) newAdmin(c *sluiceCluster) (*client.Admin, error) {
	return client.NewAdmin(strings.Join(c.addrs, ","), client.WithLogger(s.logger), client.RequestTimeout(10*time.Second))
}

func readMemAll(c *sluiceCluster) []memSample {
	var out []memSample
	for _, p := range brokers(c) {
		out = append(out, readMem(p.cmd.Process.Pid))
	}
	return out
}

// produce measures one produce run: total bytes of records without keys,
// spread over the topic's n partitions by the client's default partitioner.
func (s *partSuite) produce(ctx context.Context, d deployment, c *sluiceCluster, run, n int, total int64) error {
	admin, err := s.newAdmin(c)
	if err != nil {
		return err
	}
	defer admin.Close()
	topic := fmt.Sprintf("produce-%d", n)
	if err := s.createTopic(ctx, d, admin, fmt.Sprintf("%s-produce-%d", d.Name, n), topic, n); err != nil {
		return err
	}
	size := s.o.RecordSize
	res := partProduce{Deployment: d.Name, Run: run, Partitions: n, Size: size, Wanted: total / int64(size)}
	p, err := client.NewProducer(strings.Join(c.addrs, ","), s.clientOpts(d)...)
	if err != nil {
		return err
	}
	a := newAcks()
	promise := func(_ *client.Record, err error) { a.record(err) }
	pl := newPayloads(size, uint64(run*100000+n))
	start := time.Now()
	var sent int64
	for sent < res.Wanted {
		if sent&1023 == 0 && time.Since(start) > s.o.MaxPhase {
			res.Capped = true
			break
		}
		if ctx.Err() != nil {
			break
		}
		p.Produce(ctx, &client.Record{Topic: topic, Value: pl.next()}, promise)
		sent++
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	if err := p.Flush(fctx); err != nil {
		res.Err = "flush: " + err.Error()
	}
	cancel()
	if err := a.wait(ctx, sent, time.Minute); err != nil && res.Err == "" {
		res.Err = err.Error()
	}
	elapsed := time.Since(start)
	_ = p.Close()
	res.Records, res.Failed, res.Sent = a.ok.Load(), a.failed.Load(), sent
	res.Seconds = elapsed.Seconds()
	res.RecsPerSec = float64(res.Records) / res.Seconds
	res.MBPerSec = float64(res.Records) * float64(size) / 1e6 / res.Seconds
	if e := a.firstErr(); e != nil && res.Err == "" {
		res.Err = fmt.Sprintf("%d records failed; first: %v", res.Failed, e)
	}
	res.Brokers = readMemAll(c)
	s.rep.TotalBytes += res.Records * int64(size)
	s.rep.Produce = append(s.rep.Produce, res)
	logf("[%s] produce, %d partitions: %d records in %.2f s = %.0f records/s, %.1f MB/s; broker VmHWM %s%s",
		d.Name, n, res.Records, res.Seconds, res.RecsPerSec, res.MBPerSec, memList(res.Brokers, func(m memSample) int64 { return m.HWM }), errSuffix(res.Err, res.Capped))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

func errSuffix(err string, capped bool) string {
	s := ""
	if capped {
		s += " [time cap]"
	}
	if err != "" {
		s += " ERROR: " + err
	}
	return s
}

func memList(ms []memSample, f func(memSample) int64) string {
	var out []string
	for _, m := range ms {
		out = append(out, fmtMiB(f(m)))
	}
	return strings.Join(out, ", ")
}

func fmtMiB(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// writeChunked writes perPart bytes of records into each of the topic's n
// partitions, chosen by the record (client.ManualPartitioner): runs of
// s.o.MemRun consecutive records to one partition, cycling over all of them.
// It returns the records acknowledged and the time taken.
func (s *partSuite) writeChunked(ctx context.Context, d deployment, c *sluiceCluster, topic string, n int, perPart int64, seed uint64) (acked, wanted int64, secs float64, err error) {
	size := s.o.RecordSize
	recsPerPart := max(1, int(perPart/int64(size)))
	wanted = int64(recsPerPart) * int64(n)
	p, err := client.NewProducer(strings.Join(c.addrs, ","), s.clientOpts(d, client.WithPartitioner(client.ManualPartitioner()))...)
	if err != nil {
		return 0, wanted, 0, err
	}
	a := newAcks()
	promise := func(_ *client.Record, err error) { a.record(err) }
	pl := newPayloads(size, seed)
	start := time.Now()
	var sent int64
	capped := false
send:
	for base := 0; base < recsPerPart; base += s.o.MemRun {
		for part := range n {
			for range min(s.o.MemRun, recsPerPart-base) {
				if sent&1023 == 0 && (time.Since(start) > s.o.MaxPhase || ctx.Err() != nil) {
					capped = true
					break send
				}
				p.Produce(ctx, &client.Record{Topic: topic, Partition: int32(part), Value: pl.next()}, promise)
				sent++
			}
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	ferr := p.Flush(fctx)
	cancel()
	werr := a.wait(ctx, sent, time.Minute)
	secs = time.Since(start).Seconds()
	_ = p.Close()
	acked = a.ok.Load()
	s.rep.TotalBytes += acked * int64(size)
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case capped:
		err = fmt.Errorf("time cap (%s): %d of %d records sent", s.o.MaxPhase, sent, wanted)
	case ferr != nil:
		err = fmt.Errorf("flush: %w", ferr)
	case werr != nil:
		err = werr
	case a.failed.Load() > 0:
		err = fmt.Errorf("%d records failed; first: %v", a.failed.Load(), a.firstErr())
	}
	return acked, wanted, secs, err
}

// memory writes memBytes into each of n partitions, reads the brokers'
// memory, waits s.o.Idle and reads it again.
func (s *partSuite) memory(ctx context.Context, d deployment, c *sluiceCluster, n int, perPart int64) error {
	admin, err := s.newAdmin(c)
	if err != nil {
		return err
	}
	defer admin.Close()
	topic := fmt.Sprintf("memory-%d", n)
	if err := s.createTopic(ctx, d, admin, d.Name+"-memory", topic, n); err != nil {
		return err
	}
	res := partMemory{Deployment: d.Name, Partitions: n, BytesPerPart: perPart}
	acked, wanted, secs, werr := s.writeChunked(ctx, d, c, topic, n, perPart, 7)
	res.Records, res.Wanted, res.WriteSeconds = acked, wanted, secs
	res.MBPerSec = float64(acked) * float64(s.o.RecordSize) / 1e6 / secs
	if werr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res.Err = werr.Error()
	}
	after := readMemAll(c)
	logf("[%s] memory: %d records into %d partitions in %.1f s (%.1f MB/s); broker VmRSS %s, VmHWM %s%s; idle %s ...",
		d.Name, acked, n, secs, res.MBPerSec, memList(after, func(m memSample) int64 { return m.RSS }),
		memList(after, func(m memSample) int64 { return m.HWM }), errSuffix(res.Err, false), s.o.Idle)
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.o.Idle):
	}
	res.IdleSeconds = time.Since(t0).Seconds()
	idle := readMemAll(c)
	for i := range after {
		res.Brokers = append(res.Brokers, brokerMemory{Broker: i + 1, Replicas: n * int(d.RF) / d.Brokers, AfterWrite: after[i], AfterIdle: idle[i]})
	}
	s.rep.Memory = append(s.rep.Memory, res)
	logf("[%s] memory after %s idle: VmRSS %s (of which LazyFree %s), VmHWM %s", d.Name, s.o.Idle,
		memList(idle, func(m memSample) int64 { return m.RSS }), memList(idle, func(m memSample) int64 { return m.LazyFree }),
		memList(idle, func(m memSample) int64 { return m.HWM }))
	return nil
}
