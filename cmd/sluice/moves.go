package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/actors/placement"
	"github.com/sluicemq/sluice/client"
)

// Moving partitions between brokers: `sluice cluster reassign`,
// `reassignments`, `rebalance` and `drain`. The plans come from
// actors/placement over the metadata; the moves are the controller's
// (Admin.AlterPartitionReassignments); these commands start them and
// follow them until they are done.

// layout is where the cluster's partitions are, as one broker sees it.
type layout struct {
	replicas map[placement.Partition][]int32
	leaders  map[placement.Partition]int32
	// racks maps each live broker to its rack ("" for none).
	racks map[int32]string
}

func loadLayout(ctx context.Context, admin *client.Admin) (*layout, error) {
	md, err := admin.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	l := &layout{replicas: map[placement.Partition][]int32{}, leaders: map[placement.Partition]int32{}, racks: map[int32]string{}}
	for _, b := range md.Brokers {
		l.racks[b.ID] = b.Rack
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			k := placement.Partition{Topic: t.Name, Index: p.Partition}
			l.replicas[k], l.leaders[k] = p.Replicas, p.Leader
		}
	}
	return l, nil
}

// move is one partition of a plan.
type move struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	From      []int32 `json:"from"`
	To        []int32 `json:"to"`
}

// movesOf lists a plan in partition order.
func movesOf(plan map[placement.Partition][]int32, current map[placement.Partition][]int32) []move {
	var out []move
	for _, p := range slices.SortedFunc(maps.Keys(plan), comparePartitions) {
		out = append(out, move{Topic: p.Topic, Partition: p.Index, From: current[p], To: plan[p]})
	}
	return out
}

func comparePartitions(a, b placement.Partition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Index) - int(b.Index)
}

// copies counts the replicas a plan copies to brokers that lack them.
func copies(moves []move) int {
	n := 0
	for _, m := range moves {
		for _, id := range m.To {
			if !slices.Contains(m.From, id) {
				n++
			}
		}
	}
	return n
}

// printPlan says what a plan does, one line per partition.
func printPlan(w io.Writer, moves []move) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tTO")
	for _, m := range moves {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Topic, m.Partition, ids(m.From), ids(m.To))
	}
	tw.Flush()
}

// startMoves asks the controller for the moves, a chunk at a time; it
// fails naming every partition whose move was refused.
func startMoves(ctx context.Context, admin *client.Admin, moves []move, throttle int64) error {
	const chunk = 500
	var refused []string
	for len(moves) > 0 {
		n := min(chunk, len(moves))
		var req []client.Reassignment
		for _, m := range moves[:n] {
			req = append(req, client.Reassignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.To, Throttle: throttle})
		}
		results, err := admin.AlterPartitionReassignments(ctx, req...)
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Err != nil {
				refused = append(refused, fmt.Sprintf("%s %d: %v", r.Topic, r.Partition, r.Err))
			}
		}
		moves = moves[n:]
	}
	if len(refused) > 0 {
		return fmt.Errorf("%d moves refused:\n  %s", len(refused), strings.Join(refused, "\n  "))
	}
	return nil
}

// waitMoves follows moves until every partition has its target replicas
// and is not moving, printing progress when it changes. Ctrl-C stops the
// waiting, not the moves.
func waitMoves(admin *client.Admin, moves []move, stdout io.Writer, timeout time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	last := -1
	for {
		done, err := movesDone(ctx, admin, moves, timeout)
		if err == nil && done != last {
			fmt.Fprintf(stdout, "%d of %d partitions moved\n", done, len(moves))
			last = done
		}
		if done == len(moves) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("stopped waiting; the moves go on (sluice cluster reassignments lists them)")
		case <-time.After(time.Second):
		}
	}
}

// movesDone counts the moves whose partition has its target replicas, all
// in sync, and is not moving.
func movesDone(ctx context.Context, admin *client.Admin, moves []move, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	moving, err := admin.ListPartitionReassignments(ctx)
	if err != nil {
		return 0, err
	}
	md, err := admin.Metadata(ctx)
	if err != nil {
		return 0, err
	}
	busy := map[placement.Partition]bool{}
	for _, m := range moving {
		busy[placement.Partition{Topic: m.Topic, Index: m.Partition}] = true
	}
	now := map[placement.Partition]client.PartitionMetadata{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			now[placement.Partition{Topic: t.Name, Index: p.Partition}] = p
		}
	}
	done := 0
	for _, m := range moves {
		k := placement.Partition{Topic: m.Topic, Index: m.Partition}
		p, ok := now[k]
		if ok && !busy[k] && slices.Equal(p.Replicas, m.To) && len(p.ISR) == len(m.To) {
			done++
		}
	}
	return done, nil
}

// moveFlags are the flags of the commands that move partitions.
type moveFlags struct {
	dryRun, noWait *bool
	throttle       *int64
	format         *outputFormat
}

// check refuses flags that cannot work, before any broker is asked.
func (f moveFlags) check() error {
	if *f.throttle < 0 {
		return usageErr("--throttle %d: want bytes per second, or 0 for no limit", *f.throttle)
	}
	return nil
}

func addMoveFlags(fs *flag.FlagSet, format *outputFormat) moveFlags {
	return moveFlags{
		dryRun: fs.Bool("dry-run", false, "print the plan and move nothing"),
		noWait: fs.Bool("no-wait", false, "return once the moves have started (sluice cluster reassignments follows them)"),
		throttle: fs.Int64("throttle", 0, "bytes per second each leader's broker may send in all to the replicas the moves add, "+
			"so producers keep their bandwidth (0: no limit); asked again with another value, moves in progress take it"),
		format: format,
	}
}

// carryOut prints a plan, then (unless a dry run) starts it and waits for
// it. what names the plan in messages.
func carryOut(admin *client.Admin, l *layout, plan map[placement.Partition][]int32, f moveFlags, timeout time.Duration, what string, stdout io.Writer) error {
	moves := movesOf(plan, l.replicas)
	if f.format.json() {
		writeJSONLine(stdout, struct {
			Moves  []move `json:"moves"`
			Copies int    `json:"replicas_copied"`
		}{append([]move{}, moves...), copies(moves)})
	} else if len(moves) > 0 {
		fmt.Fprintf(stdout, "%s: %d partitions, %d replicas copied to other brokers\n", what, len(moves), copies(moves))
		printPlan(stdout, moves)
	}
	if len(moves) == 0 {
		if !f.format.json() {
			fmt.Fprintf(stdout, "%s: nothing to move\n", what)
		}
		return nil
	}
	if *f.dryRun {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := startMoves(ctx, admin, moves, *f.throttle); err != nil {
		return err
	}
	if *f.noWait {
		fmt.Fprintln(stdout, "moves started")
		return nil
	}
	if err := waitMoves(admin, moves, stdout, timeout); err != nil {
		return err
	}
	// Each new replica set's first broker leads it (no data moves).
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var targets []client.ElectionTarget
	for _, m := range moves {
		targets = append(targets, client.ElectionTarget{Topic: m.Topic, Partitions: []int32{m.Partition}})
	}
	if _, err := admin.ElectLeaders(ctx, targets...); err != nil {
		fmt.Fprintf(stdout, "moved; giving leadership to the preferred replicas failed (the controller does it by itself): %v\n", err)
	}
	return nil
}

// rebalance is `sluice cluster rebalance`: replicas and preferred leaders
// spread evenly over the live brokers with the fewest moves.
func rebalance(admin *client.Admin, f moveFlags, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l, err := loadLayout(ctx, admin)
	if err != nil {
		return err
	}
	return carryOut(admin, l, placement.Balance(l.replicas, l.racks), f, timeout, "rebalance", stdout)
}

// drain is `sluice cluster drain BROKER`: leadership off the broker
// first, then every replica, and then it says the broker can be stopped.
func drain(admin *client.Admin, broker int32, f moveFlags, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l, err := loadLayout(ctx, admin)
	if err != nil {
		return err
	}
	if _, ok := l.racks[broker]; !ok {
		return fmt.Errorf("broker %d is not a live broker", broker)
	}
	if len(l.racks) < 2 {
		return fmt.Errorf("broker %d is the only live broker: there is nowhere to move its replicas", broker)
	}
	plan := placement.Drain(l.replicas, l.racks, broker)
	for p, reps := range plan {
		if slices.Contains(reps, broker) {
			return fmt.Errorf("cannot drain broker %d: %s-%d needs %d replicas on %d other brokers", broker, p.Topic, p.Index, len(reps), len(l.racks)-1)
		}
	}
	if !*f.dryRun {
		if err := leadershipOff(ctx, admin, l, broker, stdout); err != nil {
			return err
		}
	}
	if err := carryOut(admin, l, plan, f, timeout, fmt.Sprintf("drain broker %d", broker), stdout); err != nil {
		return err
	}
	if !*f.dryRun && !*f.noWait {
		fmt.Fprintf(stdout, "broker %d holds no replicas and leads nothing: it can be stopped\n", broker)
	}
	return nil
}

// leadershipOff moves the leadership of the partitions broker leads to
// their other in-sync replicas before any data moves: each gets its
// replicas reordered (broker last, no data moves) and a preferred leader
// election.
func leadershipOff(ctx context.Context, admin *client.Admin, l *layout, broker int32, stdout io.Writer) error {
	var reorder []client.Reassignment
	var targets []client.ElectionTarget
	for _, p := range slices.SortedFunc(maps.Keys(l.replicas), comparePartitions) {
		reps := l.replicas[p]
		if l.leaders[p] != broker || len(reps) < 2 {
			continue
		}
		order := append(slices.DeleteFunc(slices.Clone(reps), func(id int32) bool { return id == broker }), broker)
		reorder = append(reorder, client.Reassignment{Topic: p.Topic, Partition: p.Index, Replicas: order})
		targets = append(targets, client.ElectionTarget{Topic: p.Topic, Partitions: []int32{p.Index}})
		l.replicas[p] = order
	}
	if len(reorder) == 0 {
		return nil
	}
	if _, err := admin.AlterPartitionReassignments(ctx, reorder...); err != nil {
		return err
	}
	results, err := admin.ElectLeaders(ctx, targets...)
	if err != nil {
		return err
	}
	moved := 0
	for _, r := range results {
		if r.Err == nil {
			moved++
		}
	}
	fmt.Fprintf(stdout, "leadership of %d of %d partitions moved off broker %d\n", moved, len(targets), broker)
	return nil
}

// parseReassignment reads TOPIC:P=B,B,... (or TOPIC:P to cancel).
func parseReassignment(arg string, cancel bool) (client.Reassignment, error) {
	bad := usageErr("%q: want TOPIC:PARTITION=BROKER,BROKER,...", arg)
	if cancel {
		bad = usageErr("%q: want TOPIC:PARTITION", arg)
	}
	spec, brokers, hasBrokers := strings.Cut(arg, "=")
	cut := strings.LastIndexByte(spec, ':')
	if cut <= 0 || hasBrokers == cancel {
		return client.Reassignment{}, bad
	}
	p, err := strconv.ParseInt(spec[cut+1:], 10, 32)
	if err != nil || p < 0 {
		return client.Reassignment{}, bad
	}
	r := client.Reassignment{Topic: spec[:cut], Partition: int32(p)}
	if cancel {
		return r, nil
	}
	for _, s := range strings.Split(brokers, ",") {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil || id < 0 {
			return client.Reassignment{}, bad
		}
		r.Replicas = append(r.Replicas, int32(id))
	}
	return r, nil
}

// reassign is `sluice cluster reassign`: the moves named on the command
// line (or their cancels).
func reassign(admin *client.Admin, args []string, cancel bool, f moveFlags, timeout time.Duration, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("want at least one TOPIC:PARTITION=BROKER,BROKER,...")
	}
	var asked []client.Reassignment
	for _, a := range args {
		r, err := parseReassignment(a, cancel)
		if err != nil {
			return err
		}
		asked = append(asked, r)
	}
	ctx, stop := context.WithTimeout(context.Background(), timeout)
	defer stop()
	if cancel {
		results, err := admin.AlterPartitionReassignments(ctx, asked...)
		if err != nil {
			return err
		}
		failed := 0
		for _, r := range results {
			if r.Err != nil {
				failed++
				fmt.Fprintf(stdout, "%s %d: %v\n", r.Topic, r.Partition, r.Err)
			} else {
				fmt.Fprintf(stdout, "%s %d: move cancelled\n", r.Topic, r.Partition)
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d cancels failed", failed, len(results))
		}
		return nil
	}
	l, err := loadLayout(ctx, admin)
	if err != nil {
		return err
	}
	plan := map[placement.Partition][]int32{}
	for _, r := range asked {
		plan[placement.Partition{Topic: r.Topic, Index: r.Partition}] = r.Replicas
	}
	return carryOut(admin, l, plan, f, timeout, "reassign", stdout)
}

// listReassignments is `sluice cluster reassignments`.
func listReassignments(admin *client.Admin, format *outputFormat, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	moving, err := admin.ListPartitionReassignments(ctx)
	if err != nil {
		return err
	}
	if format.json() {
		type ongoing struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
			Adding    []int32 `json:"adding"`
			Removing  []int32 `json:"removing"`
		}
		for _, m := range moving {
			writeJSONLine(stdout, ongoing{m.Topic, m.Partition, m.Replicas, nonNil(m.AddingReplicas), nonNil(m.RemovingReplicas)})
		}
		return nil
	}
	if len(moving) == 0 {
		fmt.Fprintln(stdout, "no partition is moving")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, m := range moving {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", m.Topic, m.Partition, ids(m.Replicas), ids(m.AddingReplicas), ids(m.RemovingReplicas))
	}
	return tw.Flush()
}
