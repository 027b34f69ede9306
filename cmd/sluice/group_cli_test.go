package main

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// describeRow is one partition line of `sluice group describe`.
type describeRow struct {
	committed, end, leo, lag int64
	owner                    string
}

// describeRows runs `sluice group describe` and parses its partition table
// for topic.
func describeRows(t *testing.T, addr, group, topic string) map[int32]describeRow {
	t.Helper()
	out, errOut, code := runCLI(t, "", "group", "describe", group, "--broker", addr)
	if code != 0 {
		t.Fatalf("group describe: exit %d\n%s%s", code, out, errOut)
	}
	rows := map[int32]describeRow{}
	table := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if slices.Equal(f, []string{"TOPIC", "PARTITION", "COMMITTED", "END", "LEO", "LAG", "OWNER"}) {
			table = true
			continue
		}
		if !table || len(f) < 6 || f[0] != topic {
			continue
		}
		var nums [5]int64
		for i := range nums {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				t.Fatalf("describe line %q: %v", line, err)
			}
			nums[i] = n
		}
		r := describeRow{committed: nums[1], end: nums[2], leo: nums[3], lag: nums[4]}
		if len(f) == 7 {
			r.owner = f[6]
		}
		rows[int32(nums[0])] = r
	}
	if !table {
		t.Fatalf("describe has no partition table:\n%s", out)
	}
	return rows
}

// checkRows compares describe's rows with want, partition by partition.
func checkRows(t *testing.T, step string, got map[int32]describeRow, want map[int32]describeRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: describe lists %v, want %v", step, got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Fatalf("%s: partition %d described as %+v, want %+v", step, p, got[p], w)
		}
	}
}

// sortedLines returns out's lines, sorted.
func sortedLines(out string) []string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	return lines
}

// `sluice consume --group` consumes from the group's commits and commits
// what it printed; `group describe` shows committed offset, end, LEO and lag
// per partition; each mode of `group reset-offsets` moves the commits, and
// the next group consumer starts there; a reset is refused while the group
// has a member.
func TestCLIGroups(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	run := b.cli
	consume := func(max int, extra ...string) []string {
		t.Helper()
		args := append([]string{"consume", "cli", "--group", "G", "--max", strconv.Itoa(max), "--format", "%p %o %v"}, extra...)
		return sortedLines(run("", args...))
	}
	run("", "topic", "create", "cli", "--partitions", "2")
	run("a0\na1\na2\na3\na4\n", "produce", "cli", "--partition", "0")
	run("b0\nb1\nb2\n", "produce", "cli", "--partition", "1")

	got := consume(8, "--from-beginning")
	want := []string{"0 0 a0", "0 1 a1", "0 2 a2", "0 3 a3", "0 4 a4", "1 0 b0", "1 1 b1", "1 2 b2"}
	if !slices.Equal(got, want) {
		t.Fatalf("first group consume: %v, want %v", got, want)
	}
	checkRows(t, "after the first consume", describeRows(t, b.Addr, "G", "cli"),
		map[int32]describeRow{0: {committed: 5, end: 5, leo: 5, lag: 0}, 1: {committed: 3, end: 3, leo: 3, lag: 0}})
	run("a5\na6\n", "produce", "cli", "--partition", "0")
	checkRows(t, "after two more records", describeRows(t, b.Addr, "G", "cli"),
		map[int32]describeRow{0: {committed: 5, end: 7, leo: 7, lag: 2}, 1: {committed: 3, end: 3, leo: 3, lag: 0}})
	// The group resumes at its commits, not at the end (the default start).
	if got := consume(2); !slices.Equal(got, []string{"0 5 a5", "0 6 a6"}) {
		t.Fatalf("consume from the commits: %v", got)
	}

	if out := run("", "group", "reset-offsets", "G", "--topic", "cli", "--to-earliest"); out != "cli 0 -> 0\ncli 1 -> 0\n" {
		t.Fatalf("reset to earliest printed %q", out)
	}
	checkRows(t, "after --to-earliest", describeRows(t, b.Addr, "G", "cli"),
		map[int32]describeRow{0: {committed: 0, end: 7, leo: 7, lag: 7}, 1: {committed: 0, end: 3, leo: 3, lag: 3}})
	if got := consume(10); len(got) != 10 || got[0] != "0 0 a0" || got[9] != "1 2 b2" {
		t.Fatalf("consume after --to-earliest: %v", got)
	}

	// An offset beyond a partition's end moves to the end.
	if out := run("", "group", "reset-offsets", "G", "--topic", "cli", "--to-offset", "4"); out != "cli 0 -> 4\ncli 1 -> 3\n" {
		t.Fatalf("reset to offset 4 printed %q", out)
	}
	checkRows(t, "after --to-offset 4", describeRows(t, b.Addr, "G", "cli"),
		map[int32]describeRow{0: {committed: 4, end: 7, leo: 7, lag: 3}, 1: {committed: 3, end: 3, leo: 3, lag: 0}})
	if got := consume(3); !slices.Equal(got, []string{"0 4 a4", "0 5 a5", "0 6 a6"}) {
		t.Fatalf("consume after --to-offset 4: %v", got)
	}

	run("", "group", "reset-offsets", "G", "--topic", "cli", "--to-earliest")
	if out := run("", "group", "reset-offsets", "G", "--topic", "cli", "--to-latest"); out != "cli 0 -> 7\ncli 1 -> 3\n" {
		t.Fatalf("reset to latest printed %q", out)
	}
	checkRows(t, "after --to-latest", describeRows(t, b.Addr, "G", "cli"),
		map[int32]describeRow{0: {committed: 7, end: 7, leo: 7, lag: 0}, 1: {committed: 3, end: 3, leo: 3, lag: 0}})
	run("b3\n", "produce", "cli", "--partition", "1")
	if got := consume(1); !slices.Equal(got, []string{"1 3 b3"}) {
		t.Fatalf("consume after --to-latest: %v", got)
	}
	// delete-offsets forgets a partition's commit: the group starts it
	// over by its reset policy.
	if out := run("", "group", "delete-offsets", "G", "--topic", "cli", "--partition", "1"); out != "cli 1: deleted\n" {
		t.Fatalf("delete-offsets printed %q", out)
	}
	checkRows(t, "after delete-offsets of partition 1", describeRows(t, b.Addr, "G", "cli"),
		map[int32]describeRow{0: {committed: 7, end: 7, leo: 7, lag: 0}, 1: {committed: -1, end: 4, leo: 4, lag: 4}})

	// A running member: describe names it as the owner, a reset is
	// refused, and once it exits (SIGTERM) it has left the group.
	member := exec.Command(cliBin, "consume", "cli", "--group", "G", "--broker", b.Addr)
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	defer member.Process.Kill()
	a := newAdmin(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var memberID string
	waitFor(t, "the consumer a member of G", func() bool {
		info, err := a.DescribeGroup(ctx, "G")
		if err != nil || len(info.Members) != 1 || info.State != "Stable" {
			return false
		}
		memberID = info.Members[0].MemberId
		return true
	})
	for p, r := range describeRows(t, b.Addr, "G", "cli") {
		if r.owner != memberID {
			t.Fatalf("partition %d owned by %q, want %q", p, r.owner, memberID)
		}
	}
	if out, errOut, code := runCLI(t, "", "group", "reset-offsets", "G", "--topic", "cli", "--to-earliest", "--broker", b.Addr); code == 0 || !strings.Contains(errOut, "NON_EMPTY_GROUP") {
		t.Fatalf("reset with a member: exit %d, %q %q", code, out, errOut)
	}
	_ = member.Process.Signal(syscall.SIGTERM)
	if err := member.Wait(); err != nil {
		t.Fatalf("consumer after SIGTERM: %v", err)
	}
	if info, err := a.DescribeGroup(ctx, "G"); err != nil || len(info.Members) != 0 {
		t.Fatalf("group after the consumer exited: %v %v", info, err)
	}
}

// sluice group delete removes a group without members and its offsets;
// it refuses a group with members and names one that does not exist.
func TestGroupDelete(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	b.cli("", "topic", "create", "t", "--partitions", "2")
	b.cli("a\nb\n", "produce", "t")
	b.cli("", "consume", "t", "--group", "g", "--from-beginning", "--max", "2")
	if out := b.cli("", "group", "list"); !strings.Contains(out, "g ") {
		t.Fatalf("group list before: %s", out)
	}
	b.cli("", "group", "delete", "g")
	if out := b.cli("", "group", "list"); strings.Contains(out, "g ") {
		t.Errorf("group list after the deletion: %s", out)
	}
	d := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "g", "--format", "json"))[0]
	for _, p := range d.Partitions {
		if p.Committed != -1 {
			t.Errorf("partition %d still has offset %d", p.Partition, p.Committed)
		}
	}
	if _, errOut, code := runCLI(t, "", "group", "delete", "never", "--broker", b.Addr); code != 1 || !strings.Contains(errOut, "GROUP_ID_NOT_FOUND") {
		t.Errorf("deleting a group that never was: exit %d, %s", code, errOut)
	}
	// The group starts afresh: a new member reads from the start again.
	if out := b.cli("", "consume", "t", "--group", "g", "--from-beginning", "--max", "2"); len(strings.Fields(out)) != 2 {
		t.Errorf("after the deletion the group read %q", out)
	}
}

// A member commits where it started the partitions it was assigned but
// read nothing from (Kafka commits the reset position): the group resumes
// there next time, not at the end, past the records written meanwhile.
func TestGroupCommitsWhereUnreadPartitionsStart(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	b.cli("", "topic", "create", "resets", "--partitions", "3")
	b.cli("a0\na1\na2\n", "produce", "resets", "--partition", "0")
	if got := sortedLines(b.cli("", "consume", "resets", "--group", "R", "--from-beginning", "--max", "3", "--format", "%p %o %v")); !slices.Equal(got, []string{"0 0 a0", "0 1 a1", "0 2 a2"}) {
		t.Fatalf("first consume: %v", got)
	}
	checkRows(t, "after reading partition 0 only", describeRows(t, b.Addr, "R", "resets"),
		map[int32]describeRow{0: {committed: 3, end: 3, leo: 3}, 1: {committed: 0}, 2: {committed: 0}})
	b.cli("b0\n", "produce", "resets", "--partition", "1")
	b.cli("c0\n", "produce", "resets", "--partition", "2")
	// Without --from-beginning a partition with no commit would start at
	// the end; these have commits.
	if got := sortedLines(b.cli("", "consume", "resets", "--group", "R", "--max", "2", "--format", "%p %o %v")); !slices.Equal(got, []string{"1 0 b0", "2 0 c0"}) {
		t.Fatalf("second consume: %v", got)
	}
}
