package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type report struct {
	Options   options      `json:"options"`
	Command   string       `json:"command"`
	Started   time.Time    `json:"started"`
	Finished  time.Time    `json:"finished"`
	Machine   machine      `json:"machine"`
	Disk      diskResults  `json:"disk"`
	Sluice    sluiceInfo   `json:"sluice"`
	NATS      natsInfo     `json:"nats"`
	Hdr       string       `json:"hdrhistogram"`
	GoVersion string       `json:"go"`
	Systems   []systemSpec `json:"systems"`
	Commands  []commandSet `json:"commands"`
	Results   []result     `json:"results"`
	LoadAvg   string       `json:"loadavg_at_start"`
	Load      []loadSample `json:"load"`
}

// loadSample is how busy the rest of the machine was during one system's run.
type loadSample struct {
	System   string  `json:"system"`
	Run      int     `json:"run"`
	Seconds  float64 `json:"seconds"`
	OtherCPU float64 `json:"other_cpu"` // share of all CPUs used by processes not ours
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

type machine struct {
	CPUs     int     `json:"cpus"`
	CPUModel string  `json:"cpu_model"`
	MemGiB   float64 `json:"mem_gib"`
	Kernel   string  `json:"kernel"`
	FS       string  `json:"fs"` // filesystem of the data directories
}

type diskResults struct {
	DDCommand string        `json:"dd_command"`
	DD        []float64     `json:"dd_mb_per_s"`
	Fsync     []float64     `json:"fsync_per_s"`
	FsyncRuns []fsyncResult `json:"fsync_runs"`
}

type sluiceInfo struct {
	Rev         string `json:"rev"`
	Commit      string `json:"commit"`
	Subject     string `json:"subject"`
	ClientDirty string `json:"client_dirty,omitempty"`
	ClientRev   string `json:"client_rev,omitempty"`
}

type natsInfo struct {
	Server string `json:"server"`
	Client string `json:"client"`
}

type commandSet struct {
	System   string   `json:"system"`
	Commands []string `json:"commands"`
	Config   string   `json:"config"`
}

func machineInfo(dir string) machine {
	m := machine{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(fields[1], 64)
				m.MemGiB = kb / (1 << 20)
			}
		}
		f.Close()
	}
	m.FS = mountOf(dir)
	return m
}

// mountOf describes the mount holding dir: "ext4 on /dev/vda (/)".
func mountOf(dir string) string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return ""
	}
	abs, _ := filepath.Abs(dir)
	best, desc := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		if (abs == f[1] || strings.HasPrefix(abs, strings.TrimSuffix(f[1], "/")+"/")) && len(f[1]) >= len(best) {
			best, desc = f[1], fmt.Sprintf("%s on %s (%s)", f[2], f[0], f[1])
		}
	}
	var st syscall.Statfs_t
	if syscall.Statfs(abs, &st) == nil {
		desc += fmt.Sprintf(", %.0f GiB free", float64(st.Bavail)*float64(st.Bsize)/(1<<30))
	}
	return desc
}

func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "?"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "?"
}

// ---- aggregation ----------------------------------------------------------------

// stat is a metric over the runs: median and spread.
type stat struct {
	Med, Min, Max float64
	N             int
}

func newStat(vs []float64) stat {
	if len(vs) == 0 {
		return stat{Med: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{Med: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

func (s stat) ok() bool { return s.N > 0 && !math.IsNaN(s.Med) }

type key struct {
	System string
	Kind   string
	Size   int
	Rate   int
}

// group returns the results of one measurement, one per run.
func (r *report) group(k key) []result {
	var out []result
	for _, x := range r.Results {
		if x.System == k.System && x.Kind == k.Kind && x.Size == k.Size && x.Rate == k.Rate {
			out = append(out, x)
		}
	}
	return out
}

func (r *report) stat(k key, f func(result) float64) stat {
	var vs []float64
	for _, x := range r.group(k) {
		if x.Records > 0 && (x.Kind != "latency" || x.Samples > 0) {
			vs = append(vs, f(x))
		}
	}
	return newStat(vs)
}

func (r *report) label(sys string) string {
	for _, s := range r.Systems {
		if s.Name == sys {
			return s.Label
		}
	}
	return sys
}

// ran reports whether the run measured phase (older results.json: all).
func (r *report) ran(phase string) bool {
	return len(r.Options.Phases) == 0 || slices.Contains(r.Options.Phases, phase)
}

func (r *report) has(sys string) bool {
	return slices.ContainsFunc(r.Systems, func(s systemSpec) bool { return s.Name == sys })
}

// ---- formatting ----------------------------------------------------------------

func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func (s stat) cell(f func(float64) string) string {
	if !s.ok() {
		return "–"
	}
	if s.N == 1 {
		return "**" + f(s.Med) + "**"
	}
	return fmt.Sprintf("**%s** (%s–%s)", f(s.Med), f(s.Min), f(s.Max))
}

func ratio(a, b stat) string {
	if !a.ok() || !b.ok() || b.Med == 0 {
		return "–"
	}
	v := a.Med / b.Med
	if v < 0.1 {
		return fmt.Sprintf("%.2g×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func sizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// notes lists what went wrong in a measurement's runs.
func notes(rs []result) string {
	var out []string
	seen := map[string]bool{}
	addNote := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, x := range rs {
		if x.Capped {
			if x.Kind == "latency" {
				addNote(fmt.Sprintf("run %d: rate not sustained, sent %d of %d", x.Run, x.Sent, x.Wanted))
			} else {
				addNote(fmt.Sprintf("run %d: time cap, %d records", x.Run, x.Records))
			}
		} else if x.Kind == "latency" && x.Achieved < 0.95*float64(x.Rate) {
			addNote(fmt.Sprintf("run %d: sent at %s/s only", x.Run, fmtNum(x.Achieved)))
		}
		if x.Kind == "latency" && x.Samples == 0 && x.Err == "" {
			addNote(fmt.Sprintf("run %d: no record sent after the warm-up, so no latency figure", x.Run))
		}
		if x.Failed > 0 {
			addNote(fmt.Sprintf("run %d: %d failed", x.Run, x.Failed))
		}
		if x.Missing > 0 {
			addNote(fmt.Sprintf("run %d: %d not consumed", x.Run, x.Missing))
		}
		if x.Err != "" {
			e := x.Err
			if len(e) > 120 {
				e = e[:120] + "…"
			}
			addNote(fmt.Sprintf("run %d: %s", x.Run, strings.ReplaceAll(e, "|", "/")))
		}
	}
	return strings.Join(out, "; ")
}

func writeOutputs(r *report, outDir string, writeJSON bool) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	if writeJSON {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(outDir, "results.json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if err := writeChart(r, filepath.Join(outDir, "results.png")); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	// The partitions suite's section of RESULTS.md stays as it is.
	md := keepPartitionsSection(filepath.Join(outDir, "RESULTS.md"), r.markdown())
	if err := os.WriteFile(filepath.Join(outDir, "RESULTS.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(r.summaryTables())
	logf("wrote %s, %s and %s", filepath.Join(outDir, "RESULTS.md"), filepath.Join(outDir, "results.png"), filepath.Join(outDir, "results.json"))
	return nil
}

func (r *report) markdown() string {
	var b strings.Builder
	o := r.Options
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Sluice benchmark results\n\n")
	w("Generated by the harness in this directory (`benchmarks/README.md` says how to run it and what each number means). ")
	w("One full run: medians over %d runs per system, the min–max over those runs in brackets. ", o.Runs)
	w("The harness reports; it passes or fails on no number.\n\n")
	w("![throughput and latency](results.png)\n\n")

	w("## Machine and versions\n\n")
	w("| | |\n| --- | --- |\n")
	w("| date | %s (the run took %s) |\n", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second))
	w("| CPU | %d × %s |\n", r.Machine.CPUs, r.Machine.CPUModel)
	w("| memory | %.1f GiB |\n", r.Machine.MemGiB)
	w("| kernel | Linux %s |\n", r.Machine.Kernel)
	w("| data directories | %s |\n", r.Machine.FS)
	dd, fsync := newStat(r.Disk.DD), newStat(r.Disk.Fsync)
	w("| disk, `%s` | %s MB/s |\n", r.Disk.DDCommand, dd.cell(func(v float64) string { return fmt.Sprintf("%.0f", v) }))
	w("| disk, %d B write + fdatasync loop | %s fsyncs/s |\n", o.FsyncBlock, fsync.cell(func(v float64) string { return fmt.Sprintf("%.0f", v) }))
	if len(r.Disk.FsyncRuns) > 0 {
		var a, c, d []float64
		for _, f := range r.Disk.FsyncRuns {
			a, c, d = append(a, f.P50), append(c, f.P99), append(d, f.Max)
		}
		w("| disk, one write + fdatasync | p50 %s ms, p99 %s ms, max %s ms |\n", newStat(a).cell(fmtMs), newStat(c).cell(fmtMs), newStat(d).cell(fmtMs))
	}
	if len(r.Load) > 0 {
		var vs []float64
		for _, l := range r.Load {
			vs = append(vs, 100*l.OtherCPU)
		}
		st := newStat(vs)
		w("| machine load | load average %s at the start; CPU used by processes other than the harness and its servers while a system was measured: median %.0f%%, max %.0f%% of both CPUs (per run in results.json) |\n",
			r.LoadAvg, st.Med, st.Max)
	}
	w("| Go | %s |\n", r.GoVersion)
	sl := r.Sluice.Commit
	if len(sl) > 12 {
		sl = sl[:12]
	}
	from := "built from that commit, exported with git archive"
	if r.Sluice.Rev == "worktree" {
		from = "built from the work tree on top of it"
	} else if r.Sluice.Rev != r.Sluice.Commit {
		from = fmt.Sprintf("`-sluice-rev %s`, exported with git archive", r.Sluice.Rev)
	}
	w("| Sluice broker | `%s` “%s” (%s) |\n", sl, r.Sluice.Subject, from)
	if r.Sluice.ClientRev != "" {
		w("| Sluice client | compiled from the same commit (`benchmarks/run.sh` builds the harness against an export of it) |\n")
	} else if r.Sluice.ClientDirty != "" {
		w("| Sluice client | compiled from the work tree, which differed from that commit in: %s |\n",
			strings.ReplaceAll(strings.ReplaceAll(r.Sluice.ClientDirty, "\n", ", "), "|", "/"))
	} else {
		w("| Sluice client | compiled from the work tree; client/, messages/, transport/ and acl/ were unchanged from that commit |\n")
	}
	if r.NATS.Server != "" {
		w("| NATS | %s (built from the Go module proxy), nats.go %s |\n", r.NATS.Server, r.NATS.Client)
	}
	w("| histogram | github.com/HdrHistogram/hdrhistogram-go %s |\n\n", r.Hdr)

	w("## Load\n\n")
	w("- Every system is driven by the same generator (`load.go`): one topic/stream with one partition per measurement, ")
	w("random incompressible values, at most **%d unacknowledged records** per producer (the window), ", o.Window)
	w("throughput runs of %s records (capped at %s), ", joinInts(o.Records, "/"), o.MaxPhase)
	w("latency runs of %s + %s warm-up at %s records/s with %s records.\n", o.LatDuration, o.LatWarmup, joinInts(o.Rates, ", "), joinSizes(o.LatSizes))
	for _, s := range r.Systems {
		w("- **%s**: %s.\n", s.Label, s.Desc)
	}
	w("\n")

	w("## Throughput\n\n")
	w("Produce: records acknowledged per second (Sluice acks=1/all, JetStream PubAck). Consume: the same records read back from the start.\n\n")
	w("| system | size | produce records/s | produce MB/s | consume records/s | consume MB/s | notes |\n")
	w("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range r.Systems {
		for _, size := range o.Sizes {
			pk, ck := key{s.Name, "produce", size, 0}, key{s.Name, "consume", size, 0}
			n := notes(append(r.group(pk), r.group(ck)...))
			w("| %s | %s | %s | %s | %s | %s | %s |\n", s.Label, sizeName(size),
				r.stat(pk, recsPerSec).cell(fmtNum), r.stat(pk, mbPerSec).cell(fmtNum),
				r.stat(ck, recsPerSec).cell(fmtNum), r.stat(ck, mbPerSec).cell(fmtNum), n)
		}
	}
	r.cpuMarkdown(w)
	if r.ran("latency") {
		r.latencyMarkdown(w)
	}
	r.ratiosMarkdown(w, dd)
	if r.ran("latency") {
		r.latencyFootnote(w)
	}
	r.commandsMarkdown(w, sl)
	return b.String()
}

// cpuMarkdown is the CPU each system spent per GB produced: on a machine
// of two cores the servers, the clients and the load generator compete
// for CPU, so efficiency is the figure that carries to larger machines.
func (r *report) cpuMarkdown(w func(string, ...any)) {
	serverCPU := func(x result) float64 { return x.ServerCPUPerGB }
	harnessCPU := func(x result) float64 { return x.HarnessCPUPerGB }
	var rows []string
	for _, s := range r.Systems {
		for _, size := range r.Options.Sizes {
			k := key{s.Name, "produce", size, 0}
			sv, hv := r.stat(k, serverCPU), r.stat(k, harnessCPU)
			if !sv.ok() || sv.Med == 0 && hv.Med == 0 {
				continue
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |\n", s.Label, sizeName(size), sv.cell(fmtNum), hv.cell(fmtNum),
				fmtNum(sv.Med+hv.Med)))
		}
	}
	if len(rows) == 0 {
		return
	}
	w("\n### CPU per GB produced\n\n")
	w("CPU seconds (user + system) per 10^9 bytes of values acknowledged in the produce runs: of the servers' processes ")
	w("(every broker, Consul, every nats-server) and of the harness process (the clients and the load generator; kfake runs there too).\n\n")
	w("| system | size | servers | harness | total |\n| --- | --- | --- | --- | --- |\n")
	for _, row := range rows {
		w("%s", row)
	}
}

func (r *report) latencyMarkdown(w func(string, ...any)) {
	o := r.Options
	w("\n## Latency, produce → consume\n\n")
	w("Milliseconds from a record's scheduled send time to its arrival at the consumer (open loop: waiting behind a full window counts). ")
	w("The ack columns measure the same records from the scheduled send time to the producer's acknowledgement.\n\n")
	w("| system | size | rate/s | p50 | p99 | p99.9 | max | ack p50 | ack p99 | notes |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range r.Systems {
		for _, size := range o.LatSizes {
			for _, rate := range o.Rates {
				k := key{s.Name, "latency", size, rate}
				w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Label, sizeName(size), fmtNum(float64(rate)),
					r.stat(k, p50).cell(fmtMs), r.stat(k, p99).cell(fmtMs), r.stat(k, p999).cell(fmtMs), r.stat(k, pmax).cell(fmtMs),
					r.stat(k, func(x result) float64 { return x.AckP50 }).cell(fmtMs), r.stat(k, func(x result) float64 { return x.AckP99 }).cell(fmtMs),
					notes(r.group(k)))
			}
		}
	}
}

func (r *report) ratiosMarkdown(w func(string, ...any), dd stat) {
	o := r.Options
	w("\n## Ratios\n\n")
	w("Of medians. Throughput: above 1× means Sluice moves more. The dd column sets Sluice's produce MB/s against 60%% of this disk's dd figure (%.0f MB/s × 0.6 = %.0f MB/s).\n\n", dd.Med, 0.6*dd.Med)
	ddStat := stat{Med: 0.6 * dd.Med, Min: 0.6 * dd.Med, Max: 0.6 * dd.Med, N: 1}
	peers := [][2]string{{"sluice-1", "nats-always"}, {"sluice-1", "nats-default"}, {"sluice-kafka-1", "kfake"},
		{"sluice-3", "nats-3-always"}, {"sluice-3", "nats-3"}}
	w("| ratio | size | produce | consume |\n| --- | --- | --- | --- |\n")
	for _, pr := range peers {
		if !r.has(pr[0]) || !r.has(pr[1]) {
			continue
		}
		for _, size := range o.Sizes {
			w("| %s / %s | %s | %s | %s |\n", r.label(pr[0]), r.label(pr[1]), sizeName(size),
				ratio(r.stat(key{pr[0], "produce", size, 0}, recsPerSec), r.stat(key{pr[1], "produce", size, 0}, recsPerSec)),
				ratio(r.stat(key{pr[0], "consume", size, 0}, recsPerSec), r.stat(key{pr[1], "consume", size, 0}, recsPerSec)))
		}
	}
	for _, sys := range []string{"sluice-1", "sluice-3"} {
		if !r.has(sys) || !dd.ok() {
			continue
		}
		for _, size := range o.Sizes {
			w("| %s MB/s / (60%% of dd) | %s | %s | – |\n", r.label(sys), sizeName(size), ratio(r.stat(key{sys, "produce", size, 0}, mbPerSec), ddStat))
		}
	}
	if !r.ran("latency") {
		return
	}
	w("\nLatency: Sluice's percentile divided by the peer's; below 1× means Sluice is faster.\n\n")
	w("| ratio | size | rate/s | p50 | p99 | p99.9 |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, pr := range peers {
		if !r.has(pr[0]) || !r.has(pr[1]) {
			continue
		}
		for _, size := range o.LatSizes {
			for _, rate := range o.Rates {
				a, c := key{pr[0], "latency", size, rate}, key{pr[1], "latency", size, rate}
				mark := ""
				if !sustained(r.group(a)) || !sustained(r.group(c)) {
					mark = " †"
				}
				w("| %s / %s | %s | %s | %s%s | %s%s | %s%s |\n", r.label(pr[0]), r.label(pr[1]), sizeName(size), fmtNum(float64(rate)),
					ratio(r.stat(a, p50), r.stat(c, p50)), mark, ratio(r.stat(a, p99), r.stat(c, p99)), mark, ratio(r.stat(a, p999), r.stat(c, p999)), mark)
			}
		}
	}
}

func (r *report) latencyFootnote(w func(string, ...any)) {
	w("\n† At least one side did not send at the asked rate in some run: its latency is time spent queueing behind the window, which grows with the length of the run, so the ratio only says which side kept up.\n")
}

func (r *report) commandsMarkdown(w func(string, ...any), sl string) {
	o := r.Options
	w("\n## Exact commands\n\n```sh\n")
	w("# the harness (from the repository root)\n%s\n", r.Command)
	w("# the machine's limits, in a directory on the data filesystem\n%s\n", r.Disk.DDCommand)
	w("# a Go loop: %d B write + fdatasync, repeated for %s\n", o.FsyncBlock, o.FsyncFor)
	if r.Sluice.Rev == "worktree" {
		w("# the broker, from the work tree\ngo build -o sluice ./cmd/sluice\n")
	} else {
		w("# the broker, from commit %s exported with git archive\ngo build -o sluice ./cmd/sluice\n", sl)
	}
	if r.NATS.Server != "" {
		w("# nats-server, in a scratch module (cached in ~/.cache/sluice/nats-server-%s)\n", o.NATSVersion)
		w("go get github.com/nats-io/nats-server/v2@v%s && go mod tidy && go build -o nats-server github.com/nats-io/nats-server/v2\n", o.NATSVersion)
	}
	w("```\n\nServers, per run, each with fresh data directories under a temp dir (`DIR`) and free ports on 127.0.0.1 (as of run 1):\n\n")
	for _, c := range r.Commands {
		w("**%s**\n\n```\n", r.label(c.System))
		for _, cmd := range c.Commands {
			w("%s\n", shortenPaths(cmd))
		}
		w("```\n\n%s\n\n", indentConfig(shortenPaths(c.Config)))
	}
}

// shortenPaths replaces the run's temp directory with DIR.
func shortenPaths(s string) string {
	fields := strings.Fields(s)
	for _, f := range fields {
		f = strings.Trim(f, "\"")
		if i := strings.Index(f, "/sluice-bench-"); i >= 0 {
			rest := f[i+1:]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				s = strings.ReplaceAll(s, f[:i+1+j], "DIR")
			} else {
				s = strings.ReplaceAll(s, f[:i+1+len(rest)], "DIR")
			}
		}
	}
	return s
}

func indentConfig(s string) string {
	head, conf, ok := strings.Cut(s, "nats.conf:\n")
	if !ok {
		return s
	}
	body, tail, _ := strings.Cut(conf, "}\n")
	return head + "nats.conf:\n\n```\n" + body + "}\n```\n\n" + tail
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmtNum(float64(n))
	}
	return strings.Join(s, sep)
}

func joinSizes(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = sizeName(n)
	}
	return strings.Join(s, ", ")
}

func recsPerSec(x result) float64 { return x.RecsPerSec }
func mbPerSec(x result) float64   { return x.MBPerSec }
func p50(x result) float64        { return x.P50 }
func p99(x result) float64        { return x.P99 }
func p999(x result) float64       { return x.P999 }
func pmax(x result) float64       { return x.Max }

// summaryTables is the plain-text digest printed at the end of a run.
func (r *report) summaryTables() string {
	var b strings.Builder
	o := r.Options
	dd := newStat(r.Disk.DD)
	fmt.Fprintf(&b, "\ndisk: dd %.0f MB/s, write+fdatasync %.0f/s (medians)\n\n", dd.Med, newStat(r.Disk.Fsync).Med)
	fmt.Fprintf(&b, "%-20s %6s %12s %10s %12s %10s\n", "system", "size", "prod rec/s", "prod MB/s", "cons rec/s", "cons MB/s")
	for _, s := range r.Systems {
		for _, size := range o.Sizes {
			pk, ck := key{s.Name, "produce", size, 0}, key{s.Name, "consume", size, 0}
			fmt.Fprintf(&b, "%-20s %6s %12s %10s %12s %10s\n", s.Label, sizeName(size), fmtNum(r.stat(pk, recsPerSec).Med),
				fmtNum(r.stat(pk, mbPerSec).Med), fmtNum(r.stat(ck, recsPerSec).Med), fmtNum(r.stat(ck, mbPerSec).Med))
		}
	}
	if !r.ran("latency") {
		return b.String()
	}
	fmt.Fprintf(&b, "\n%-20s %6s %7s %9s %9s %9s\n", "system", "size", "rate", "p50 ms", "p99 ms", "p99.9 ms")
	for _, s := range r.Systems {
		for _, size := range o.LatSizes {
			for _, rate := range o.Rates {
				k := key{s.Name, "latency", size, rate}
				fmt.Fprintf(&b, "%-20s %6s %7s %9s %9s %9s\n", s.Label, sizeName(size), fmtNum(float64(rate)),
					fmtMs(r.stat(k, p50).Med), fmtMs(r.stat(k, p99).Med), fmtMs(r.stat(k, p999).Med))
			}
		}
	}
	return b.String()
}
