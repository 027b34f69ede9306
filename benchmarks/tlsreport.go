package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeTLSOutputs writes results-tls.json (if writeJSON) and replaces the
// TLS section of RESULTS.md (appending it if missing); the rest of the
// file stays as it is.
func writeTLSOutputs(r *tlsReport, outDir string, writeJSON bool) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	jsonPath := filepath.Join(outDir, "results-tls.json")
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
		old = []byte("# Sluice benchmark results\n\nThe default suite (`benchmarks/run.sh`) writes its tables above the suites' sections; it has not run into this directory yet.\n")
	} else if err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(tlsMarkers.splice(string(old), r.markdown())), 0o644); err != nil {
		return err
	}
	fmt.Print(r.summary())
	if writeJSON {
		logf("wrote the TLS section of %s, and %s", mdPath, jsonPath)
	} else {
		logf("wrote the TLS section of %s", mdPath)
	}
	return nil
}

func (r *tlsReport) ran(p string) bool { return slices.Contains(r.Options.Phases, p) }

// runs returns the measurements of kind for setup in mode, in run order.
func (r *tlsReport) runs(setup string, on bool, kind string) []tlsRun {
	var out []tlsRun
	for _, x := range r.Runs {
		if x.Setup == setup && x.TLS == on && x.Result.Kind == kind {
			out = append(out, x)
		}
	}
	return out
}

func (r *tlsReport) stat(setup string, on bool, kind string, f func(tlsRun) float64) stat {
	var vs []float64
	for _, x := range r.runs(setup, on, kind) {
		if x.Result.Records > 0 && (kind != "latency" || x.Result.Samples > 0) {
			if v := f(x); !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
	}
	return newStat(vs)
}

// pairedRatios are on ÷ off of f for every round that has both.
func (r *tlsReport) pairedRatios(setup, kind string, f func(tlsRun) float64) stat {
	var vs []float64
	for _, on := range r.runs(setup, true, kind) {
		for _, off := range r.runs(setup, false, kind) {
			if on.Round == off.Round && on.Result.Records > 0 && off.Result.Records > 0 {
				if a, b := f(on), f(off); b > 0 && !math.IsNaN(a) {
					vs = append(vs, a/b)
				}
			}
		}
	}
	return newStat(vs)
}

func perGB(cpu func(tlsRun) float64) func(tlsRun) float64 {
	return func(x tlsRun) float64 {
		gb := float64(x.Result.Records) * float64(x.Result.Size) / 1e9
		if gb <= 0 || cpu(x) <= 0 {
			return math.NaN()
		}
		return cpu(x) / gb
	}
}

var (
	tlsRecs      = func(x tlsRun) float64 { return x.Result.RecsPerSec }
	tlsMB        = func(x tlsRun) float64 { return x.Result.MBPerSec }
	tlsBrokerCPU = perGB(func(x tlsRun) float64 { return x.BrokerCPU })
	tlsClientCPU = perGB(func(x tlsRun) float64 { return x.ClientCPU })
	tlsAckP50    = func(x tlsRun) float64 { return x.Result.AckP50 }
	tlsAckP99    = func(x tlsRun) float64 { return x.Result.AckP99 }
	tlsE2EP50    = func(x tlsRun) float64 { return x.Result.P50 }
	tlsE2EP99    = func(x tlsRun) float64 { return x.Result.P99 }
)

// spread is (max − min) ÷ median, in percent.
func spread(s stat) string {
	if !s.ok() || s.N < 2 || s.Med == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*(s.Max-s.Min)/s.Med)
}

// ratioCell is on ÷ off of the medians, with the paired rounds' range.
func ratioCell(on, off, paired stat) string {
	if !on.ok() || !off.ok() || off.Med == 0 {
		return "–"
	}
	c := fmt.Sprintf("**%.2f×**", on.Med/off.Med)
	if paired.ok() && paired.N > 1 {
		c += fmt.Sprintf(" (rounds %.2f–%.2f×)", paired.Min, paired.Max)
	}
	return c
}

func fmtSecs2(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func tlsNotes(rs []tlsRun) string {
	var xs []result
	for _, x := range rs {
		xs = append(xs, x.Result)
	}
	return notes(xs)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func (r *tlsReport) markdown() string {
	var b strings.Builder
	o := r.Options
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n", tlsBegin)
	w("## Cost of TLS (`-suite tls`)\n\n")
	w("Written by the TLS suite of the harness in this directory (`benchmarks/README.md`: how to run it, what each number means); ")
	w("the other suites keep this section when they rewrite their parts of the file. Raw numbers in `results-tls.json`. ")
	w("Each deployment is measured with TLS off and with mutual TLS on, %d runs each, on servers started fresh for every run, in alternating order ", o.Runs)
	w("(off, on in odd rounds; on, off in even ones), with the same records, payloads, window and client settings; ")
	w("medians, the min–max over the runs in brackets, the spread as (max − min) ÷ median. **on/off** is the median with TLS on divided by the median with it off; ")
	w("“rounds” is the range of that ratio taken round by round (each round ran off and on back to back).")
	if o.Quick {
		w(" **This is a `-quick` run: fewer records and runs than the full suite.**")
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
		worst, worstV := "", -1.0
		for _, l := range r.Load {
			vs = append(vs, 100*l.OtherCPU)
			if 100*l.OtherCPU > worstV {
				worst, worstV = l.Step, 100*l.OtherCPU
			}
		}
		st := newStat(vs)
		w("| machine load | load average %s at the start; CPU used by processes other than the harness and its servers during each run: median %.0f%%, max %.0f%% (%s) of both CPUs |\n",
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
	w("| certificates | `%s`, once at the start (ECDSA P-256, one CA); brokers with TLS on: `--tls-cert DIR/certs/broker-N.crt --tls-key DIR/certs/broker-N.key --tls-ca DIR/certs/ca.crt --super-users User:admin`; the harness's client: `client.TLS(user-admin.crt, user-admin.key, ca.crt)`, principal User:admin (a super-user: ACLs are checked and bypassed). Broker–broker traffic (replication, controller) is mutual TLS too; Consul's HTTP API is not |\n",
		shortenPaths(r.CertsCmd))
	w("| producer | the harness's load generator (`load.go`) with one `client.Producer`: linger %s, batch %s, %d requests in flight per partition, at most %d records unacknowledged (the window); one topic with one partition per measurement |\n",
		o.Linger, fmtBytes(int64(o.BatchBytes)), o.MaxInFlight, o.Window)
	w("| records | %s values of random (incompressible) bytes, no keys; %s records per one-broker produce run, %s per RF=3 run, the same for TLS off and on (time cap %s) |\n",
		sizeName(o.RecordSize), fmtNum(float64(o.Records)), fmtNum(float64(o.RF3Records)), o.MaxPhase)
	w("| data written | %.1f GiB in all (replicas counted) |\n", float64(r.TotalBytes)/(1<<30))
	w("| command | `%s` |\n\n", r.Command)

	if r.ran("produce") {
		w("### Produce throughput, TLS off and on\n\n")
		w("Records acknowledged per second from the first send to the last answer; MB = 10^6 bytes of values. ")
		w("CPU per GB: CPU seconds (user + system) used during the run by all broker processes together (`/proc/PID/stat`) and by the harness, which is the client, per 10^9 bytes of values acknowledged; ")
		w("with RF=3 the brokers' figure includes replication to the two followers.\n\n")
		w("| deployment | TLS | records/s | MB/s | spread | on/off | broker CPU s per GB | client CPU s per GB | notes |\n")
		w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, st := range r.Setups {
			offR := r.stat(st.Name, false, "produce", tlsRecs)
			for _, on := range []bool{false, true} {
				rs := r.stat(st.Name, on, "produce", tlsRecs)
				mb := r.stat(st.Name, on, "produce", tlsMB)
				bc := r.stat(st.Name, on, "produce", tlsBrokerCPU)
				cc := r.stat(st.Name, on, "produce", tlsClientCPU)
				ratio, bcs, ccs := "", bc.cell(fmtSecs2), cc.cell(fmtSecs2)
				if on {
					ratio = ratioCell(rs, offR, r.pairedRatios(st.Name, "produce", tlsRecs))
					offB, offC := r.stat(st.Name, false, "produce", tlsBrokerCPU), r.stat(st.Name, false, "produce", tlsClientCPU)
					if bc.ok() && offB.ok() && offB.Med > 0 {
						bcs += fmt.Sprintf(" = %.2f× off", bc.Med/offB.Med)
					}
					if cc.ok() && offC.ok() && offC.Med > 0 {
						ccs += fmt.Sprintf(" = %.2f× off", cc.Med/offC.Med)
					}
				}
				w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", st.Label, onOff(on), rs.cell(fmtNum), mb.cell(fmtNum), spread(rs), ratio,
					bcs, ccs, tlsNotes(r.runs(st.Name, on, "produce")))
			}
		}
		w("\nEvery run in the order it ran (records/s):\n\n")
		for _, st := range r.Setups {
			var parts []string
			for _, x := range r.Runs {
				if x.Setup == st.Name && x.Result.Kind == "produce" {
					parts = append(parts, fmt.Sprintf("%s %s", onOff(x.TLS), fmtNum(x.Result.RecsPerSec)))
				}
			}
			w("- %s: %s\n", st.Label, strings.Join(parts, ", "))
		}
		w("\n")
	}
	if r.ran("latency") {
		w("### Produce latency at %s records/s, TLS off and on\n\n", fmtNum(float64(o.LatRate)))
		w("Records sent at a fixed rate (open loop: each record has a scheduled send time stamped into its first 8 bytes) for %s of warm-up (not recorded) and %s, into an HdrHistogram, ", o.LatWarmup, o.LatDuration)
		w("on the same fresh servers just before their produce run. **ack**: ms from the scheduled send time to the producer's acknowledgement (acks as in the deployment's name); ")
		w("**produce→consume**: to the record's arrival in a consumer in the same process (over TLS too when it is on). on/off as above, of the ack percentiles.\n\n")
		w("| deployment | TLS | ack p50 | ack p99 | on/off p50 | on/off p99 | produce→consume p50 | produce→consume p99 | notes |\n")
		w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, st := range r.Setups {
			off50, off99 := r.stat(st.Name, false, "latency", tlsAckP50), r.stat(st.Name, false, "latency", tlsAckP99)
			for _, on := range []bool{false, true} {
				a50, a99 := r.stat(st.Name, on, "latency", tlsAckP50), r.stat(st.Name, on, "latency", tlsAckP99)
				e50, e99 := r.stat(st.Name, on, "latency", tlsE2EP50), r.stat(st.Name, on, "latency", tlsE2EP99)
				r50, r99 := "", ""
				if on {
					r50 = ratioCell(a50, off50, r.pairedRatios(st.Name, "latency", tlsAckP50))
					r99 = ratioCell(a99, off99, r.pairedRatios(st.Name, "latency", tlsAckP99))
				}
				w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", st.Label, onOff(on), a50.cell(fmtMs), a99.cell(fmtMs), r50, r99,
					e50.cell(fmtMs), e99.cell(fmtMs), tlsNotes(r.runs(st.Name, on, "latency")))
			}
		}
		w("\n")
	}

	w("### Servers\n\nEvery run starts its brokers fresh (data under a temp dir `DIR`, free ports on 127.0.0.1, each server its own process group) and stops them after it. ")
	w("The one broker gets `--id 1` with TLS off too, since its certificate names broker 1. The RF=3 runs share one Consul agent, started once; each run's three brokers form a cluster of their own (`--cluster` is the run's name). As of the first run of each:\n\n")
	for _, c := range r.Commands {
		setup, mode, _ := strings.Cut(c.System, "/")
		label := setup
		for _, s := range r.Setups {
			if s.Name == setup {
				label = s.Label
			}
		}
		w("**%s, %s**\n\n```\n", label, strings.Replace(mode, "tls-", "TLS ", 1))
		for _, cmd := range c.Commands {
			w("%s\n", shortenPaths(cmd))
		}
		w("```\n\n")
	}
	w("%s", tlsEnd)
	return b.String()
}

// summary is the plain-text digest printed at the end of a run.
func (r *tlsReport) summary() string {
	var b strings.Builder
	o := r.Options
	if r.ran("produce") {
		fmt.Fprintf(&b, "\nproduce throughput, %s records (median [min-max] over %d runs):\n", sizeName(o.RecordSize), o.Runs)
		fmt.Fprintf(&b, "%-28s %-26s %-26s %s\n", "deployment", "TLS off records/s", "TLS on records/s", "on/off")
		for _, st := range r.Setups {
			off := r.stat(st.Name, false, "produce", tlsRecs)
			on := r.stat(st.Name, true, "produce", tlsRecs)
			fmt.Fprintf(&b, "%-28s %-26s %-26s %s\n", st.Label, plainCell(off), plainCell(on),
				strings.ReplaceAll(ratioCell(on, off, r.pairedRatios(st.Name, "produce", tlsRecs)), "**", ""))
		}
	}
	if r.ran("latency") {
		fmt.Fprintf(&b, "\nproduce (ack) latency at %s records/s, ms, p50 / p99 (medians):\n", fmtNum(float64(o.LatRate)))
		for _, st := range r.Setups {
			fmt.Fprintf(&b, "%-28s off %s / %s   on %s / %s\n", st.Label,
				fmtMs(r.stat(st.Name, false, "latency", tlsAckP50).Med), fmtMs(r.stat(st.Name, false, "latency", tlsAckP99).Med),
				fmtMs(r.stat(st.Name, true, "latency", tlsAckP50).Med), fmtMs(r.stat(st.Name, true, "latency", tlsAckP99).Med))
		}
	}
	return b.String()
}

func plainCell(s stat) string {
	if !s.ok() {
		return "–"
	}
	return fmt.Sprintf("%s [%s-%s]", fmtNum(s.Med), fmtNum(s.Min), fmtNum(s.Max))
}
