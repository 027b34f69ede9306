package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The partitions and TLS suites write their own sections of RESULTS.md,
// between these markers; every suite rewrites only its own part of the
// file and keeps the others' sections as they are.
const (
	partitionsBegin = "<!-- partitions:begin -->"
	partitionsEnd   = "<!-- partitions:end -->"
	tlsBegin        = "<!-- tls:begin -->"
	tlsEnd          = "<!-- tls:end -->"
)

// mdSection is one suite's section of RESULTS.md.
type mdSection struct{ begin, end string }

var (
	partitionsMarkers = mdSection{partitionsBegin, partitionsEnd}
	tlsMarkers        = mdSection{tlsBegin, tlsEnd}
)

// find returns md's section, markers included, or "".
func (m mdSection) find(md string) string {
	i := strings.Index(md, m.begin)
	if i < 0 {
		return ""
	}
	j := strings.Index(md[i:], m.end)
	if j < 0 {
		return ""
	}
	return md[i : i+j+len(m.end)]
}

// splice puts sec (markers included) in place of md's section, or at the
// end of md when it has none.
func (m mdSection) splice(md, sec string) string {
	if old := m.find(md); old != "" {
		return strings.Replace(md, old, sec, 1)
	}
	md = strings.TrimRight(md, "\n")
	if md != "" {
		md += "\n\n"
	}
	return md + sec + "\n"
}

// partitionsSection returns md's partitions section, markers included, or "".
func partitionsSection(md string) string { return partitionsMarkers.find(md) }

// spliceSection puts sec (markers included) in place of md's partitions
// section, or at the end of md when it has none.
func spliceSection(md, sec string) string { return partitionsMarkers.splice(md, sec) }

// keepPartitionsSection carries the partitions and TLS sections of the
// RESULTS.md at path, if any, over into md (the default suite's new text).
func keepPartitionsSection(path, md string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return md
	}
	for _, m := range []mdSection{partitionsMarkers, tlsMarkers, metricsMarkers} {
		if sec := m.find(string(old)); sec != "" {
			md = m.splice(md, sec)
		}
	}
	return md
}

func writePartitionOutputs(r *partReport, outDir string, writeJSON bool) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	jsonPath := filepath.Join(outDir, "results-partitions.json")
	if writeJSON {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	mdPath := filepath.Join(outDir, "RESULTS.md")
	old, err := os.ReadFile(mdPath)
	if errors.Is(err, fs.ErrNotExist) {
		old = []byte("# Sluice benchmark results\n\nThe default suite (`benchmarks/run.sh`) writes its tables above the partitions section; it has not run into this directory yet.\n")
	} else if err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(spliceSection(string(old), r.markdown())), 0o644); err != nil {
		return err
	}
	fmt.Print(r.summary())
	logf("wrote the partitions section of %s, and %s", mdPath, jsonPath)
	return nil
}

func (r *partReport) deployment(name string) deployment {
	for _, d := range allDeployments {
		if d.Name == name {
			return d
		}
	}
	return deployment{Name: name, Label: name}
}

func (r *partReport) ran(m string) bool { return slices.Contains(r.Options.Measurements, m) }

// produceGoal is the goal for n partitions against 1: 100 partitions at
// least 80%, 1,000 at least 60%. The RF=3 runs stop below 1,000; their
// largest count above 100 carries the 1,000-partition goal.
func produceGoal(d deployment, n int, counts []int) string {
	switch {
	case n == 100:
		return "≥ 80%"
	case n >= 1000:
		return "≥ 60%"
	case d.Name != "single" && n > 100 && n == slices.Max(counts):
		return "≥ 60% (the 1,000-partition goal, scaled)"
	}
	return "–"
}

func (r *partReport) produceStat(dep string, n int, f func(partProduce) float64) stat {
	var vs []float64
	for _, p := range r.Produce {
		if p.Deployment == dep && p.Partitions == n && p.Records > 0 {
			vs = append(vs, f(p))
		}
	}
	return newStat(vs)
}

func pct(a, b stat) string {
	if !a.ok() || !b.ok() || b.Med == 0 {
		return "–"
	}
	return fmt.Sprintf("**%.0f%%**", 100*a.Med/b.Med)
}

func mib(n int64) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// mibZero is mib for figures that may well be 0.
func mibZero(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func secs(v float64) string {
	if v <= 0 {
		return "–"
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f s", v)
	}
	return fmt.Sprintf("%.2f s", v)
}

func cellErr(e string) string {
	if len(e) > 160 {
		e = e[:160] + "…"
	}
	return strings.ReplaceAll(strings.ReplaceAll(e, "|", "/"), "\n", " ")
}

func (r *partReport) markdown() string {
	var b strings.Builder
	o := r.Options
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n", partitionsBegin)
	w("## Partition scaling (`-suite partitions`)\n\n")
	w("Written by the partitions suite of the harness in this directory (`benchmarks/README.md`: how to run it, what each number means); ")
	w("the default suite keeps this section when it rewrites the rest of the file. Raw numbers in `results-partitions.json`. ")
	w("Goals stand beside the measured figures; the harness passes or fails on none.")
	if o.Quick {
		w(" **This is a `-quick` run: less data per partition and a shorter idle time than the full run.**")
	}
	w("\n\n")

	w("| | |\n| --- | --- |\n")
	w("| date | %s (the suite took %s) |\n", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second))
	w("| CPU | %d × %s |\n", r.Machine.CPUs, r.Machine.CPUModel)
	w("| memory | %.1f GiB |\n", r.Machine.MemGiB)
	w("| kernel | Linux %s |\n", r.Machine.Kernel)
	w("| data directories | %s |\n", r.Machine.FS)
	if len(r.Load) > 0 {
		var vs []float64
		worst := ""
		for _, l := range r.Load {
			vs = append(vs, 100*l.OtherCPU)
			if 100*l.OtherCPU == slices.Max(vs) {
				worst = l.Step
			}
		}
		st := newStat(vs)
		w("| machine load | load average %s at the start; CPU used by processes other than the harness and its servers during each step: median %.0f%%, max %.0f%% (%s) of both CPUs |\n",
			r.LoadAvg, st.Med, st.Max, worst)
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
	w("| Sluice broker | `%s` “%s” (%s) |\n", sl, strings.ReplaceAll(r.Sluice.Subject, "|", "/"), from)
	switch {
	case r.Sluice.ClientRev != "":
		w("| Sluice client | compiled from the same commit |\n")
	case r.Sluice.ClientDirty != "" && r.Sluice.Rev != "worktree":
		w("| Sluice client | compiled from the work tree, which differed from that commit in: %s |\n",
			strings.ReplaceAll(strings.ReplaceAll(r.Sluice.ClientDirty, "\n", ", "), "|", "/"))
	default:
		w("| Sluice client | compiled from the work tree |\n")
	}
	w("| producer | %s |\n", r.Client)
	w("| records | %s values of random (incompressible) bytes, no keys |\n", sizeName(o.RecordSize))
	w("| broker log memory budget | %s |\n", r.LogMemory.Note)
	w("| data written | %.1f GiB in all |\n", float64(r.TotalBytes)/(1<<30))
	w("| command | `%s` |\n\n", r.Command)

	if r.ran("produce") {
		r.produceMarkdown(w)
	}
	if r.ran("memory") {
		r.memoryMarkdown(w)
	}
	if r.ran("restart") {
		r.restartMarkdown(w)
	}
	r.scaledMarkdown(w)
	r.partCommandsMarkdown(w)
	w("%s", partitionsEnd)
	return b.String()
}

func (r *partReport) produceMarkdown(w func(string, ...any)) {
	o := r.Options
	w("### Produce throughput\n\n")
	w("Each partition count on freshly started brokers: one topic with that many partitions, one producer sending records without keys ")
	w("(where each goes is the client's default partitioner's choice, as for any keyless records), records/s and MB/s (10^6 bytes of values) acknowledged from the first send to the last answer")
	if o.Runs > 1 {
		w("; medians over %d runs, min–max in brackets", o.Runs)
	}
	w(". “vs 1 partition” is records/s against the same deployment's 1-partition figure; ")
	w("“topic ready” is CreateTopic until every partition has a leader (and a full ISR); broker VmHWM is the peak resident memory of each broker process by the end of the run.\n\n")
	for _, d := range r.Deploys {
		sc := o.Scale[d.Name]
		w("**%s** (acks=%s), %s per run:\n\n", d.Label, d.Acks, fmtBytes(sc.ProduceBytes))
		w("| partitions | records/s | MB/s | vs 1 partition | goal | topic ready | broker VmHWM | notes |\n")
		w("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
		base := r.produceStat(d.Name, 1, func(p partProduce) float64 { return p.RecsPerSec })
		for _, n := range sc.Counts {
			rs := r.produceStat(d.Name, n, func(p partProduce) float64 { return p.RecsPerSec })
			mb := r.produceStat(d.Name, n, func(p partProduce) float64 { return p.MBPerSec })
			ready, hwm, notes := "–", "–", []string{}
			for _, t := range r.Topics {
				if t.Deployment == d.Name && t.Step == fmt.Sprintf("%s-produce-%d", d.Name, n) {
					ready = secs(t.Seconds)
				}
			}
			for _, p := range r.Produce {
				if p.Deployment != d.Name || p.Partitions != n {
					continue
				}
				var hs []string
				for _, m := range p.Brokers {
					hs = append(hs, mib(m.HWM))
				}
				hwm = strings.Join(hs, ", ")
				if p.Capped {
					notes = append(notes, fmt.Sprintf("run %d: time cap, %d of %d records", p.Run, p.Records, p.Wanted))
				}
				if p.Failed > 0 {
					notes = append(notes, fmt.Sprintf("run %d: %d failed", p.Run, p.Failed))
				}
				if p.Err != "" {
					notes = append(notes, fmt.Sprintf("run %d: %s", p.Run, cellErr(p.Err)))
				}
			}
			vs := pct(rs, base)
			if n == 1 {
				vs = "100%"
			}
			w("| %d | %s | %s | %s | %s | %s | %s | %s |\n", n, rs.cell(fmtNum), mb.cell(fmtNum), vs, produceGoal(d, n, sc.Counts), ready, hwm, strings.Join(notes, "; "))
		}
		w("\n")
	}
}

func (r *partReport) memoryMarkdown(w func(string, ...any)) {
	o := r.Options
	budget := fmt.Sprintf("< %s (`--log-memory-bytes`)", fmtBytes(r.LogMemory.Bytes))
	if !r.LogMemory.Accepted {
		budget = fmt.Sprintf("< %s (the harness's value; this broker has no `--log-memory-bytes`)", fmtBytes(r.LogMemory.Bytes))
	}
	w("### Broker memory\n\n")
	w("A fresh topic; the same bytes written into every partition (%s records, runs of %d consecutive records to one partition, cycling over all of them, `client.ManualPartitioner`); ", sizeName(o.RecordSize), o.MemRun)
	w("then VmRSS and VmHWM of each broker process from `/proc/PID/status`, once right after the last acknowledgement and again after %s with no clients writing. ", o.Idle)
	w("LazyFree (from `/proc/PID/smaps_rollup`) is memory the Go runtime has freed with MADV_FREE (`GODEBUG=madvdontneed=0`) and the kernel has not taken back yet: it counts in VmRSS until the machine needs it, so VmRSS − LazyFree is what the broker would keep under memory pressure. The goals are set against VmRSS.\n\n")
	w("| deployment | broker | partitions (replicas on it) | written per partition | write MB/s | VmRSS after writing | VmHWM | goal | VmRSS after %s idle | of which LazyFree | VmRSS − LazyFree | VmHWM | goal | notes |\n", o.Idle)
	w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, m := range r.Memory {
		d := r.deployment(m.Deployment)
		note := ""
		if m.Err != "" {
			note = cellErr(m.Err)
		}
		if m.Records < m.Wanted {
			note = strings.TrimPrefix(note+fmt.Sprintf("; %d of %d records acknowledged", m.Records, m.Wanted), "; ")
		}
		for _, bm := range m.Brokers {
			w("| %s | %d | %d (%d) | %s | %s | **%s** | %s | < 1 GiB | **%s** | %s | %s | %s | %s | %s |\n", d.Label, bm.Broker, m.Partitions, bm.Replicas,
				fmtBytes(m.BytesPerPart), fmtNum(m.MBPerSec), mib(bm.AfterWrite.RSS), mib(bm.AfterWrite.HWM),
				mib(bm.AfterIdle.RSS), mibZero(bm.AfterIdle.LazyFree), mib(bm.AfterIdle.RSS-bm.AfterIdle.LazyFree), mib(bm.AfterIdle.HWM), budget, note)
		}
	}
	w("\n")
}

func (r *partReport) restartMarkdown(w func(string, ...any)) {
	w("### Restart time\n\n")
	w("A fresh topic; the same bytes in every partition; then every broker is killed with SIGKILL (kill -9, unclean) and started again on the same data directory and address, ")
	w("and afterwards stopped with SIGTERM (clean, waiting for it to exit) and started again. Times are from the (first) process start: ")
	w("every broker accepting TCP connections; every broker logging “sluice broker ready” (read from its log every 50 ms); ")
	w("**(a)** the first metadata answer that lists the topic with all its partitions; **(b)** every partition having a leader that answers ListOffsets (16 at a time); ")
	w("**(c)** on RF=3, every partition's ISR in the metadata holding all three replicas and every replica's own log end offset (DescribeTopic) at the records written: the start of the stretch in which that held, held for 2 s to the end (right after a restart the metadata can still show the ISRs from before the stop); **(d)** every partition's high watermark (ListOffsets latest) back at the records acknowledged before the stop, ")
	w("that is, all of them readable again. (b), (c) and (d) are polled together, every round asking the metadata, then ListOffsets of every partition whose high watermark is not back yet. ")
	w("“Short” counts the acknowledged records still above the high watermarks (not readable) when the wait ended, %s after the start; ", secs(r.Options.RestartTimeout.Seconds()))
	w("the clean restart that follows the unclean one reads them again, so it tells records held back from records lost. ")
	w("With RF=3 all three brokers stop and start together (Consul keeps running).\n\n")
	w("| deployment | stop | partitions | data per partition | stop took | listening | ready (log) | (a) metadata | (b) every partition serving | (c) every ISR full | (d) every high watermark back | short | notes |\n")
	w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i, x := range r.Restart {
		d := r.deployment(x.Deployment)
		stop, took := "kill -9", "–"
		if x.Mode == "clean" {
			stop = "SIGTERM"
			var ts []string
			for _, t := range x.StopSeconds {
				ts = append(ts, secs(t))
			}
			took = strings.Join(ts, ", ")
		}
		isr := "–"
		if d.RF > 1 {
			isr = "**" + secs(x.FullISRSeconds) + "**"
			if x.FullISRSeconds == 0 && x.ServingSeconds > 0 {
				isr = "not within " + secs(r.Options.RestartTimeout.Seconds())
			}
		}
		hw := secs(x.HWSeconds)
		if x.HWSeconds == 0 && x.HWChecked > 0 {
			hw = "not within " + secs(r.Options.RestartTimeout.Seconds())
		}
		var notes []string
		for i, e := range x.StopExit {
			if e != "" && e != "exit status 0" {
				notes = append(notes, fmt.Sprintf("broker %d stopped with %s", i+1, e))
			}
		}
		if x.Err != "" {
			notes = append(notes, cellErr(x.Err))
		}
		if x.HWChecked < x.Partitions {
			notes = append(notes, fmt.Sprintf("high watermark read for %d of %d partitions", x.HWChecked, x.Partitions))
		}
		lost := fmt.Sprintf("%d", x.RecordsShort)
		if x.HWShort > 0 {
			lost = fmt.Sprintf("**%d records in %d partitions**", x.RecordsShort, x.HWShort)
			if i+1 < len(r.Restart) && r.Restart[i+1].Deployment == x.Deployment && r.Restart[i+1].HWChecked == x.Partitions {
				if next := r.Restart[i+1]; next.RecordsShort == 0 {
					notes = append(notes, "not lost: the next restart found every acknowledged record below the high watermarks")
				} else {
					notes = append(notes, fmt.Sprintf("the next restart still found %d records short", next.RecordsShort))
				}
			}
		}
		w("| %s | %s | %d | %s (%d records) | %s | %s | %s | **%s** | **%s** | %s | %s | %s | %s |\n", d.Label, stop, x.Partitions, fmtBytes(x.BytesPerPart), x.RecordsPerPart,
			took, secs(x.ListenSeconds), secs(x.ReadySeconds), secs(x.MetadataSeconds), secs(x.ServingSeconds), isr, hw, lost, strings.Join(notes, "; "))
	}
	w("\n")
}

func plainInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func (r *partReport) scaledMarkdown(w func(string, ...any)) {
	o := r.Options
	if !slices.ContainsFunc(r.Deploys, func(d deployment) bool { return d.Name == "rf3" }) {
		return
	}
	s1, s3 := o.Scale["single"], o.Scale["rf3"]
	w("### What is scaled down for RF=3, and why\n\n")
	w("| | 1 broker | 3 brokers, RF=3 |\n| --- | --- | --- |\n")
	w("| produce: partition counts | %s | %s |\n", plainInts(s1.Counts), plainInts(s3.Counts))
	w("| produce: bytes per run | %s | %s |\n", fmtBytes(s1.ProduceBytes), fmtBytes(s3.ProduceBytes))
	w("| memory: partitions × bytes each | %d × %s | %d × %s |\n", s1.MemPartitions, fmtBytes(s1.MemBytes), s3.MemPartitions, fmtBytes(s3.MemBytes))
	w("| restart: partitions × bytes each | %d × %s | %d × %s |\n\n", s1.RestartPartitions, fmtBytes(s1.RestartBytes), s3.RestartPartitions, fmtBytes(s3.RestartBytes))
	w("The three brokers and Consul share this machine's %d cores and one disk, and every RF=3 partition is three replica logs, each byte written three times to that disk. ", r.Machine.CPUs)
	w("So the RF=3 runs keep the machine's total about where the one-broker runs have it: %d partitions are %d replica logs (against %d on the one broker), ",
		slices.Max(s3.Counts), 3*slices.Max(s3.Counts), slices.Max(s1.Counts))
	w("the memory topic's %d partitions put %d replicas on every broker and %d on the machine, the restart topic's %d partitions %d replica logs (against %d). ",
		s3.MemPartitions, s3.MemPartitions, 3*s3.MemPartitions, s3.RestartPartitions, 3*s3.RestartPartitions, s1.RestartPartitions)
	w("A produce run moves %s (written %s in all) against the one broker's %s, so that a run takes about as long at the lower RF=3 throughput.\n\n",
		fmtBytes(s3.ProduceBytes), fmtBytes(3*s3.ProduceBytes), fmtBytes(s1.ProduceBytes))
}

func (r *partReport) partCommandsMarkdown(w func(string, ...any)) {
	w("### Servers\n\nEach step starts its brokers fresh (data under a temp dir `DIR`, free ports on 127.0.0.1, each server its own process group). ")
	w("The RF=3 steps share one Consul agent, started once (its leader election alone takes seconds); each step's three brokers form a cluster of their own (`--cluster` is the step's name), so nothing of an earlier step is in its metadata. As of the first step:\n\n")
	for _, c := range r.Commands {
		w("**%s**\n\n```\n", r.deployment(c.System).Label)
		for _, cmd := range c.Commands {
			w("%s\n", shortenPaths(cmd))
		}
		w("```\n\n")
	}
	if len(r.Topics) > 0 {
		var ts []string
		for _, t := range r.Topics {
			if strings.Contains(t.Step, "produce") && t.Partitions < 100 {
				continue
			}
			ts = append(ts, fmt.Sprintf("%s: %d partitions in %s", t.Step, t.Partitions, secs(t.Seconds)))
		}
		w("Topic creation, CreateTopic until every partition is writable: %s.\n\n", strings.Join(ts, "; "))
	}
}

// summary is the plain-text digest printed at the end of a run.
func (r *partReport) summary() string {
	var b strings.Builder
	o := r.Options
	for _, d := range r.Deploys {
		sc := o.Scale[d.Name]
		if r.ran("produce") {
			fmt.Fprintf(&b, "\n%s, produce %s per run:\n%-11s %11s %8s %9s %s\n", d.Label, fmtBytes(sc.ProduceBytes), "partitions", "records/s", "MB/s", "vs 1", "goal")
			base := r.produceStat(d.Name, 1, func(p partProduce) float64 { return p.RecsPerSec })
			for _, n := range sc.Counts {
				rs := r.produceStat(d.Name, n, func(p partProduce) float64 { return p.RecsPerSec })
				mb := r.produceStat(d.Name, n, func(p partProduce) float64 { return p.MBPerSec })
				fmt.Fprintf(&b, "%-11d %11s %8s %9s %s\n", n, fmtNum(rs.Med), fmtNum(mb.Med), strings.Trim(pct(rs, base), "*"), produceGoal(d, n, sc.Counts))
			}
		}
		for _, m := range r.Memory {
			if m.Deployment != d.Name {
				continue
			}
			for _, bm := range m.Brokers {
				fmt.Fprintf(&b, "%s, broker %d, %d partitions × %s: VmRSS %s after writing (VmHWM %s; goal < 1 GiB), %s after %s idle (LazyFree %s; goal < %s)\n",
					d.Label, bm.Broker, m.Partitions, fmtBytes(m.BytesPerPart), mib(bm.AfterWrite.RSS), mib(bm.AfterWrite.HWM),
					mib(bm.AfterIdle.RSS), o.Idle, mibZero(bm.AfterIdle.LazyFree), fmtBytes(r.LogMemory.Bytes))
			}
		}
		for _, x := range r.Restart {
			if x.Deployment != d.Name {
				continue
			}
			fmt.Fprintf(&b, "%s, restart after %s, %d partitions: (a) metadata %s, (b) all serving %s", d.Label,
				map[string]string{"clean": "SIGTERM", "unclean": "kill -9"}[x.Mode], x.Partitions, secs(x.MetadataSeconds), secs(x.ServingSeconds))
			if d.RF > 1 {
				fmt.Fprintf(&b, ", (c) full ISR %s", secs(x.FullISRSeconds))
			}
			fmt.Fprintf(&b, ", (d) high watermarks back %s; %d acknowledged records above the high watermarks at the end%s\n", secs(x.HWSeconds), x.RecordsShort, errSuffix(x.Err, false))
		}
	}
	return b.String()
}
