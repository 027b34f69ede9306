package main

// The move suite (-suite move): what moving a partition between brokers
// costs. Three brokers with Consul, as `sluice dev-cluster` starts them; a
// partition holding -move-mib MiB (1 GiB) of 1 KiB records is moved from
// its broker to another one, once with no throttle and once with
// -move-throttle bytes/s, and an acks=1 producer writes, for as long as
// each move lasts, to a partition led by the broker the data leaves; the
// same producer for -max-phase (15 s) with no move is the baseline. One
// run each.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicemq/sluice/client"
)

const (
	moveBegin = "<!-- move:begin -->"
	moveEnd   = "<!-- move:end -->"
)

var moveMarkers = mdSection{moveBegin, moveEnd}

type moveReport struct {
	Suite      string     `json:"suite"`
	Started    time.Time  `json:"started"`
	Finished   time.Time  `json:"finished"`
	Command    string     `json:"command"`
	Machine    machine    `json:"machine"`
	LoadAvg    string     `json:"load_avg"`
	GoVersion  string     `json:"go_version"`
	Sluice     sluiceInfo `json:"sluice"`
	MiB        int        `json:"partition_mib"`
	FillPerSec float64    `json:"fill_records_per_second"`
	// Baseline is the producer's records/s with no move.
	Baseline float64   `json:"baseline_records_per_second"`
	Moves    []moveRun `json:"moves"`
}

// moveRun is one move of the big partition.
type moveRun struct {
	Throttle   int64   `json:"throttle_bytes_per_second"` // 0: none
	From       int32   `json:"from_broker"`
	To         int32   `json:"to_broker"`
	Seconds    float64 `json:"seconds"`
	MBPerSec   float64 `json:"mb_per_second"`
	RecsPerSec float64 `json:"producer_records_per_second"`
	Err        string  `json:"error,omitempty"`
}

// runMove runs the move suite and writes its outputs.
func runMove(ctx context.Context, o options, mib int, throttle int64, root, base, consulFlag, outDir string) error {
	rep := &moveReport{Suite: "move", Started: time.Now(), Command: commandLine(), Machine: machineInfo(base), LoadAvg: loadAvg(), MiB: mib}
	buildDir := filepath.Join(base, "build")
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return err
	}
	logf("building sluice (%s) ...", o.SluiceRev)
	sb, err := buildSluice(ctx, root, o.SluiceRev, buildDir)
	if err != nil {
		return err
	}
	rep.Sluice = sluiceInfo{Rev: sb.rev, Commit: sb.commit, Subject: sb.subject, ClientDirty: sb.dirty, ClientRev: clientFrom}
	rep.GoVersion = goVersion(ctx)
	consulBin, err := findConsul(consulFlag)
	if err != nil {
		return err
	}
	dir := filepath.Join(base, "move")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c, err := startSluiceCluster(ctx, sb.bin, consulBin, dir, 3)
	if err != nil {
		return err
	}
	defer c.stop()
	t, err := newSluiceTarget(c.addrs, client.LeaderAck, 1, nil, sluiceOptions{linger: o.Linger, batchBytes: o.BatchBytes, maxInFlight: o.MaxInFlight})
	if err != nil {
		return err
	}
	defer t.close()
	for _, topic := range []string{"big", "live"} {
		if err := t.createTopic(ctx, topic); err != nil {
			return err
		}
	}
	from, err := onlyReplica(ctx, t.admin, "big")
	if err != nil {
		return err
	}
	// The producer's partition is led by the broker the data leaves.
	if err := moveAndWait(ctx, t.admin, "live", []int32{from}, 0); err != nil {
		return err
	}
	records := mib << 10
	fill := runProduce(ctx, t, "big", 1024, records, loadConfig{window: o.Window, maxPhase: 30 * time.Minute, seed: 7_000_001})
	if fill.Err != "" {
		return fmt.Errorf("filling the partition: %s", fill.Err)
	}
	rep.FillPerSec = fill.RecsPerSec
	logf("filled the partition on broker %d: %d records of 1 KiB at %.0f records/s", from, fill.Records, fill.RecsPerSec)
	live := func(seed uint64, phase time.Duration, stop <-chan struct{}) result {
		return runProduce(ctx, t, "live", 1024, 1<<30, loadConfig{window: o.Window, maxPhase: phase, seed: seed, stop: stop})
	}
	base0 := live(7_000_002, o.MaxPhase, nil)
	rep.Baseline = base0.RecsPerSec
	logf("producer with no move: %.0f records/s%s", base0.RecsPerSec, errSuffix(base0.Err, base0.Capped))

	for i, limit := range []int64{0, throttle} {
		to := int32(1 + (int(from) % 3)) // another broker
		run := moveRun{Throttle: limit, From: from, To: to}
		start := time.Now()
		type outcome struct {
			err  error
			took time.Duration
		}
		moved, done := make(chan outcome, 1), make(chan struct{})
		go func() {
			err := moveAndWait(ctx, t.admin, "big", []int32{to}, limit)
			moved <- outcome{err, time.Since(start)}
			close(done)
		}()
		p := live(uint64(7_000_003+i), 10*time.Minute, done) // as long as the move
		run.RecsPerSec = p.RecsPerSec
		out := <-moved
		if out.err != nil {
			run.Err = out.err.Error()
		}
		run.Seconds = out.took.Seconds()
		run.MBPerSec = float64(records) * 1024 / 1e6 / run.Seconds
		rep.Moves = append(rep.Moves, run)
		logf("moved %d MiB from broker %d to %d (throttle %d B/s) in %.1f s (%.0f MB/s); producer meanwhile %.0f records/s%s",
			mib, from, to, limit, run.Seconds, run.MBPerSec, run.RecsPerSec, errSuffix(run.Err, false))
		from = to
		if err := moveAndWait(ctx, t.admin, "live", []int32{from}, 0); err != nil {
			return err
		}
	}
	rep.Finished = time.Now()
	return writeMoveOutputs(rep, outDir)
}

// onlyReplica is the broker of a topic's partition 0 of one replica.
func onlyReplica(ctx context.Context, admin *client.Admin, topic string) (int32, error) {
	md, err := admin.Metadata(ctx, topic)
	if err != nil {
		return 0, err
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 || len(md.Topics[0].Partitions[0].Replicas) != 1 {
		return 0, fmt.Errorf("topic %s: want one partition of one replica: %+v", topic, md.Topics)
	}
	return md.Topics[0].Partitions[0].Replicas[0], nil
}

// moveAndWait moves topic's partition 0 to replicas and waits until it is
// there, in sync, and no longer moving.
func moveAndWait(ctx context.Context, admin *client.Admin, topic string, replicas []int32, throttle int64) error {
	res, err := admin.AlterPartitionReassignments(ctx, client.Reassignment{Topic: topic, Partition: 0, Replicas: replicas, Throttle: throttle})
	if err != nil {
		return err
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	for {
		moving, err := admin.ListPartitionReassignments(ctx, client.ElectionTarget{Topic: topic})
		if err == nil && len(moving) == 0 {
			md, err := admin.Metadata(ctx, topic)
			if err == nil && len(md.Topics) == 1 {
				p := md.Topics[0].Partitions[0]
				if slices.Equal(p.Replicas, replicas) && len(p.ISR) == len(replicas) && p.Leader == replicas[0] {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeMoveOutputs(r *moveReport, outDir string) error {
	return writeSuiteSection(outDir, "results-move.json", r, moveMarkers, r.markdown(), "move")
}

func (r *moveReport) markdown() string {
	var b strings.Builder
	fmt.Fprintln(&b, moveBegin)
	fmt.Fprintln(&b, "## Moving a partition")
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "`-suite move`, %s (%s), Sluice %s “%s”, %s. Three brokers with Consul; a partition of one replica holding %d MiB "+
		"(1 KiB records, written at %.0f records/s) moved to another broker with `AlterPartitionReassignments`; while each move lasts "+
		"an acks=1 producer writes 1 KiB records to a partition led by the broker the data leaves (with no move: for the phase cap). One run.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Finished.Sub(r.Started).Round(time.Second), shortCommit(r.Sluice.Commit), r.Sluice.Subject,
		r.GoVersion, r.MiB, r.FillPerSec)
	fmt.Fprintln(&b, "| move | time to move | MB/s copied | producer records/s meanwhile | against no move |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- |")
	fmt.Fprintf(&b, "| none | - | - | %.0f | 1.000 |\n", r.Baseline)
	for _, m := range r.Moves {
		name := "no throttle"
		if m.Throttle > 0 {
			name = fmt.Sprintf("throttle %s/s", fmtBytes(m.Throttle))
		}
		if m.Err != "" {
			name += " (" + m.Err + ")"
		}
		ratio := 0.0
		if r.Baseline > 0 {
			ratio = m.RecsPerSec / r.Baseline
		}
		fmt.Fprintf(&b, "| %s | %.1f s | %.0f | %.0f | %.3f |\n", name, m.Seconds, m.MBPerSec, m.RecsPerSec, ratio)
	}
	fmt.Fprintln(&b, moveEnd)
	return b.String()
}
