package main

// The TLS suite (-suite tls): what mutual TLS costs produce throughput and
// latency. The same deployments are measured with TLS off and on, in
// alternating order, each run on servers started fresh:
//
//   - one broker (embedded metadata), acks=1 and acks=all;
//   - three brokers on Consul, RF=3, min.insync.replicas=2, acks=all.
//
// With TLS on, every broker runs with the certificates `sluice certs dev`
// made at the start of the suite (--tls-cert/--tls-key/--tls-ca and
// --super-users User:admin), so client-broker and broker-broker traffic is
// mutual TLS; the harness's client connects as User:admin (client.TLS).
// Everything else (record count, payloads, window, client settings, broker
// flags) is the same for off and on.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/client"
)

// tlsSetup is one deployment the TLS suite measures with TLS off and on.
type tlsSetup struct {
	Name    string            `json:"name"`
	Label   string            `json:"label"`
	Brokers int               `json:"brokers"`
	RF      int32             `json:"rf"`
	Acks    string            `json:"acks"`
	Configs map[string]string `json:"configs,omitempty"`
}

var allTLSSetups = []tlsSetup{
	{Name: "single-acks1", Label: "1 broker, acks=1", Brokers: 1, RF: 1, Acks: "1"},
	{Name: "single-acksall", Label: "1 broker, acks=all", Brokers: 1, RF: 1, Acks: "all"},
	{Name: "rf3", Label: "3 brokers, RF=3, acks=all", Brokers: 3, RF: 3, Acks: "all", Configs: map[string]string{"min.insync.replicas": "2"}},
}

func (s tlsSetup) ackLevel() client.AckLevel {
	if s.Acks == "all" {
		return client.AllAcks
	}
	return client.LeaderAck
}

type tlsOptions struct {
	Setups      []string      `json:"setups"`
	Phases      []string      `json:"phases"` // produce, latency
	Runs        int           `json:"runs"`   // per setup and mode
	RecordSize  int           `json:"record_size"`
	Records     int           `json:"records"`     // per one-broker produce run
	RF3Records  int           `json:"rf3_records"` // per RF=3 produce run
	MaxPhase    time.Duration `json:"max_phase"`
	Window      int           `json:"window"`
	LatRate     int           `json:"latency_rate"`
	LatDuration time.Duration `json:"latency_duration"`
	LatWarmup   time.Duration `json:"latency_warmup"`
	Linger      time.Duration `json:"sluice_linger"`
	BatchBytes  int           `json:"sluice_batch_bytes"`
	MaxInFlight int           `json:"sluice_max_in_flight"`
	SluiceRev   string        `json:"sluice_rev"`
	Quick       bool          `json:"quick"`
}

func (o tlsOptions) records(s tlsSetup) int {
	if s.Brokers > 1 {
		return o.RF3Records
	}
	return o.Records
}

// tlsFlags are the TLS suite's own flags; it also uses -window,
// -latency-duration, -latency-warmup, -sluice-linger, -sluice-batch-bytes
// and -sluice-max-in-flight of the default suite.
type tlsFlags struct {
	setups, phases      *string
	runs, size          *int
	records, rf3Records *int
	maxPhase            *time.Duration
	rate                *int
}

func addTLSFlags(fs *flag.FlagSet) *tlsFlags {
	return &tlsFlags{
		setups:     fs.String("tls-setups", "single-acks1,single-acksall,rf3", "tls suite: deployments to measure with TLS off and on: single-acks1, single-acksall (1 broker, acks=1 / acks=all), rf3 (3 brokers + Consul, RF=3, acks=all)"),
		phases:     fs.String("tls-phases", "produce,latency", "tls suite: measurements of each run: produce (throughput) and/or latency (at -tls-latency-rate)"),
		runs:       fs.Int("tls-runs", 4, "tls suite: runs per deployment and mode, alternating off/on: off, on in odd rounds, on, off in even ones (quick: 2)"),
		size:       fs.Int("tls-record-size", 1024, "tls suite: record size in bytes"),
		records:    fs.Int("tls-records", 1000000, "tls suite: records per one-broker produce run, the same with TLS off and on (quick: 200000)"),
		rf3Records: fs.Int("tls-rf3-records", 400000, "tls suite: records per RF=3 produce run (quick: 100000)"),
		maxPhase:   fs.Duration("tls-max-phase", 30*time.Second, "tls suite: time cap of one produce run (measured over what was acknowledged by then; quick: 15s)"),
		rate:       fs.Int("tls-latency-rate", 10000, "tls suite: fixed send rate (records/s) of the latency runs"),
	}
}

func (f *tlsFlags) options(set map[string]bool, o options) (tlsOptions, error) {
	if o.Quick {
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("tls-runs", func() { *f.runs = 2 })
		def("tls-records", func() { *f.records = 200000 })
		def("tls-rf3-records", func() { *f.rf3Records = 100000 })
		def("tls-max-phase", func() { *f.maxPhase = 15 * time.Second })
	}
	t := tlsOptions{Runs: *f.runs, RecordSize: *f.size, Records: *f.records, RF3Records: *f.rf3Records, MaxPhase: *f.maxPhase,
		Window: o.Window, LatRate: *f.rate, LatDuration: o.LatDuration, LatWarmup: o.LatWarmup, Linger: o.Linger,
		BatchBytes: o.BatchBytes, MaxInFlight: o.MaxInFlight, SluiceRev: o.SluiceRev, Quick: o.Quick}
	for _, s := range strings.Split(*f.setups, ",") {
		s = strings.TrimSpace(s)
		if s == "" || slices.Contains(t.Setups, s) {
			continue
		}
		if !slices.ContainsFunc(allTLSSetups, func(x tlsSetup) bool { return x.Name == s }) {
			return t, fmt.Errorf("-tls-setups: unknown %q (want single-acks1, single-acksall, rf3)", s)
		}
		t.Setups = append(t.Setups, s)
	}
	for _, p := range strings.Split(*f.phases, ",") {
		switch p = strings.TrimSpace(p); p {
		case "produce", "latency":
			if !slices.Contains(t.Phases, p) {
				t.Phases = append(t.Phases, p)
			}
		case "":
		default:
			return t, fmt.Errorf("-tls-phases: unknown %q (want produce, latency)", p)
		}
	}
	switch {
	case len(t.Setups) == 0 || len(t.Phases) == 0:
		return t, errors.New("-tls-setups and -tls-phases must each name at least one")
	case t.Runs < 1 || t.Records < 1 || t.RF3Records < 1 || t.Window < 1:
		return t, errors.New("need -tls-runs, -tls-records, -tls-rf3-records and -window >= 1")
	case t.RecordSize < 16 || t.RecordSize > 512<<10:
		return t, errors.New("-tls-record-size: from 16 B to 512 KiB")
	case slices.Contains(t.Phases, "latency") && t.LatRate < 1:
		return t, errors.New("-tls-latency-rate must be >= 1 (or leave latency out of -tls-phases)")
	}
	return t, nil
}

// ---- results ------------------------------------------------------------------

// tlsRun is one measurement: a setup with TLS off or on, in one round.
type tlsRun struct {
	Setup string `json:"setup"`
	TLS   bool   `json:"tls"`
	Round int    `json:"round"` // 1..runs; within a round off and on each run once
	Seq   int    `json:"seq"`   // position of this step in the setup's order (1-based)
	// Result: Kind produce or latency (System is "<setup>/tls-on|off").
	Result result `json:"result"`
	// CPU seconds during the produce run: every broker process (utime +
	// stime from /proc/PID/stat), and the harness (client) process.
	BrokerCPU float64 `json:"broker_cpu_seconds,omitempty"`
	ClientCPU float64 `json:"client_cpu_seconds,omitempty"`
}

type tlsReport struct {
	Suite      string       `json:"suite"`
	Options    tlsOptions   `json:"options"`
	Command    string       `json:"command"`
	Started    time.Time    `json:"started"`
	Finished   time.Time    `json:"finished"`
	Machine    machine      `json:"machine"`
	LoadAvg    string       `json:"loadavg_at_start"`
	GoVersion  string       `json:"go"`
	Sluice     sluiceInfo   `json:"sluice"`
	CertsCmd   string       `json:"certs_command"`
	Setups     []tlsSetup   `json:"setups"`
	Commands   []commandSet `json:"commands"` // System: "<setup>/tls-on|off"
	Runs       []tlsRun     `json:"runs"`
	Load       []partLoad   `json:"load"`
	TotalBytes int64        `json:"bytes_written"`
}

func modeName(on bool) string {
	if on {
		return "tls-on"
	}
	return "tls-off"
}

// ---- running ------------------------------------------------------------------

type tlsSuite struct {
	o         tlsOptions
	rep       *tlsReport
	bin       string
	consulBin string
	base      string
	certs     string
	// The Consul agent of the RF=3 steps: one for all of them, each step's
	// brokers a cluster of their own.
	consulAddr, consulCmd string
}

// runTLS runs the TLS suite and writes its outputs.
func runTLS(ctx context.Context, o tlsOptions, root, base, consulFlag, outDir string) error {
	rep := &tlsReport{Suite: "tls", Options: o, Started: time.Now(), Command: commandLine()}
	for _, n := range o.Setups {
		for _, s := range allTLSSetups {
			if s.Name == n {
				rep.Setups = append(rep.Setups, s)
			}
		}
	}
	rep.Machine = machineInfo(base)
	rep.LoadAvg = loadAvg()
	s := &tlsSuite{o: o, rep: rep, base: base}
	err := s.run(ctx, root, consulFlag)
	rep.Finished = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted (%v); nothing written", context.Cause(ctx))
		}
		return err
	}
	logf("done in %s", rep.Finished.Sub(rep.Started).Round(time.Second))
	return writeTLSOutputs(rep, outDir, true)
}

func (s *tlsSuite) run(ctx context.Context, root, consulFlag string) error {
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
	if help, _ := runCmd(ctx, "", nil, s.bin, "broker", "-h"); !strings.Contains(help, "-tls-cert") {
		return errors.New("this sluice broker has no --tls-cert flag (not in `sluice broker -h`): nothing to measure")
	}
	if slices.ContainsFunc(rep.Setups, func(x tlsSetup) bool { return x.Brokers > 1 }) {
		if s.consulBin, err = findConsul(consulFlag); err != nil {
			return err
		}
	}
	rep.GoVersion = goVersion(ctx)

	// The certificates, once for the whole suite: a CA, brokers 1..3, User:admin.
	s.certs = filepath.Join(s.base, "certs")
	args := []string{"certs", "dev", "--out", s.certs, "--brokers", "3", "--users", "admin"}
	if out, err := runCmd(ctx, "", nil, s.bin, args...); err != nil {
		return fmt.Errorf("making certificates: %w", err)
	} else {
		vlogf("%s", strings.TrimSpace(out))
	}
	for _, f := range []string{"ca.crt", "broker-1.crt", "broker-1.key", "broker-3.key", "user-admin.crt", "user-admin.key"} {
		if _, err := os.Stat(filepath.Join(s.certs, f)); err != nil {
			return fmt.Errorf("sluice %s did not write %s: %w", strings.Join(args, " "), f, err)
		}
	}
	rep.CertsCmd = "sluice " + strings.Join(args, " ")

	for _, st := range rep.Setups {
		if err := s.setup(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// brokerTLSFlags are the flags of broker id with TLS on, as `sluice certs
// dev` prints them.
func (s *tlsSuite) brokerTLSFlags(id int) []string {
	c := func(f string) string { return filepath.Join(s.certs, f) }
	return []string{"--tls-cert", c(fmt.Sprintf("broker-%d.crt", id)), "--tls-key", c(fmt.Sprintf("broker-%d.key", id)),
		"--tls-ca", c("ca.crt"), "--super-users", "User:admin"}
}

func (s *tlsSuite) clientTLS() client.Opt {
	return client.TLS(filepath.Join(s.certs, "user-admin.crt"), filepath.Join(s.certs, "user-admin.key"), filepath.Join(s.certs, "ca.crt"))
}

// setup measures st: rounds 1..runs, TLS off then on in odd rounds and on
// then off in even ones, so neither mode always goes first.
func (s *tlsSuite) setup(ctx context.Context, st tlsSetup) error {
	if st.Brokers > 1 {
		dir := filepath.Join(s.base, st.Name+"-consul")
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
	seq := 0
	for round := 1; round <= s.o.Runs; round++ {
		order := []bool{false, true}
		if round%2 == 0 {
			order = []bool{true, false}
		}
		for _, on := range order {
			seq++
			if err := s.step(ctx, st, round, seq, on); err != nil {
				return err
			}
		}
	}
	return nil
}

// step starts st fresh (TLS on or off), runs the latency and then the
// produce measurement on it, and stops and removes it.
func (s *tlsSuite) step(ctx context.Context, st tlsSetup, round, seq int, on bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%s-%d", st.Name, modeName(on), round)
	dir := filepath.Join(s.base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	t0, c0 := time.Now(), takeCPU()
	var c *sluiceCluster
	var err error
	if st.Brokers == 1 {
		// --id 1 with TLS off too: the broker certificate names broker 1,
		// and off and on differ in nothing but TLS.
		flags := []string{"--id", "1"}
		if on {
			flags = append(flags, s.brokerTLSFlags(1)...)
		}
		c, err = startSluiceSingleWith(ctx, s.bin, dir, flags)
	} else {
		c = &sluiceCluster{}
		var flags func(int) []string
		if on {
			flags = s.brokerTLSFlags
		}
		if err = startSluiceBrokersWith(ctx, c, s.bin, s.consulAddr, name, dir, st.Brokers, flags); err != nil {
			c.stop()
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	sys := st.Name + "/" + modeName(on)
	if !slices.ContainsFunc(s.rep.Commands, func(cs commandSet) bool { return cs.System == sys }) {
		cmds := c.commands
		if st.Brokers > 1 {
			cmds = append([]string{s.consulCmd}, cmds...)
		}
		s.rep.Commands = append(s.rep.Commands, commandSet{System: sys, Commands: cmds})
	}
	started := time.Since(t0)
	err = s.measure(ctx, st, c, sys, round, seq, on)
	t1 := time.Now()
	c.stop()
	stopped := time.Since(t1)
	// A fresh client actor system for the next step.
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

func (s *tlsSuite) measure(ctx context.Context, st tlsSetup, c *sluiceCluster, sys string, round, seq int, on bool) error {
	o := s.o
	so := sluiceOptions{linger: o.Linger, batchBytes: o.BatchBytes, maxInFlight: o.MaxInFlight}
	if on {
		so.security = []client.Opt{s.clientTLS()}
	}
	t, err := newSluiceTarget(c.addrs, st.ackLevel(), st.RF, st.Configs, so)
	if err != nil {
		return err
	}
	defer t.close()
	lc := loadConfig{window: o.Window, maxPhase: o.MaxPhase}
	label := fmt.Sprintf("[%s, TLS %s, round %d/%d]", st.Label, map[bool]string{true: "on", false: "off"}[on], round, o.Runs)
	add := func(r tlsRun) {
		r.Result.System = sys
		s.rep.Runs = append(s.rep.Runs, r)
	}
	// Latency first, while the brokers' page cache and disk are quiet.
	if slices.Contains(o.Phases, "latency") {
		topic := "tls-latency"
		if err := t.createTopic(ctx, topic); err != nil {
			return err
		}
		lc.seed = uint64(7_000_000 + round)
		r := runLatency(ctx, t, topic, o.RecordSize, latencyConfig{loadConfig: lc, rate: o.LatRate,
			warmup: o.LatWarmup, duration: o.LatDuration, drain: 15 * time.Second, timeline: timeline})
		r.Run = round
		add(tlsRun{Setup: st.Name, TLS: on, Round: round, Seq: seq, Result: r})
		logf("%s latency @ %d/s: ack p50 %.2f ms, p99 %.2f ms; produce→consume p50 %.2f ms, p99 %.2f ms (sent %d/%d at %.0f/s)%s",
			label, o.LatRate, r.AckP50, r.AckP99, r.P50, r.P99, r.Sent, r.Wanted, r.Achieved, errSuffix(r.Err, r.Capped))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if slices.Contains(o.Phases, "produce") {
		topic := "tls-produce"
		if err := t.createTopic(ctx, topic); err != nil {
			return err
		}
		n := o.records(st)
		// The same payloads for off and on in a round.
		lc.seed = uint64(8_000_000 + round)
		b0, c0 := procsCPU(brokers(c)), selfCPU()
		r := runProduce(ctx, t, topic, o.RecordSize, n, lc)
		bcpu, ccpu := procsCPU(brokers(c))-b0, selfCPU()-c0
		r.Run = round
		r.Wanted = int64(n)
		s.rep.TotalBytes += r.Records * int64(o.RecordSize) * int64(st.RF)
		add(tlsRun{Setup: st.Name, TLS: on, Round: round, Seq: seq, Result: r, BrokerCPU: bcpu, ClientCPU: ccpu})
		gb := float64(r.Records) * float64(o.RecordSize) / 1e9
		logf("%s produce: %d records in %.2f s = %.0f records/s, %.1f MB/s; CPU per GB: brokers %.2f s, client %.2f s%s",
			label, r.Records, r.Seconds, r.RecsPerSec, r.MBPerSec, bcpu/gb, ccpu/gb, errSuffix(r.Err, r.Capped))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// procsCPU is the CPU time (user + system, seconds) the processes have
// used so far, from /proc/PID/stat.
func procsCPU(ps []*proc) float64 {
	var total float64
	for _, p := range ps {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		// After the command: state is field 3, utime 14, stime 15.
		ut, _ := strconv.ParseFloat(f[11], 64)
		stm, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + stm) / 100 // USER_HZ
	}
	return total
}

// selfCPU is the CPU time (user + system, seconds) of the harness process.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
