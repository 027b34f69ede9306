package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/internal/testutil"
)

// A group of 3 member processes on a 6-partition topic; a 4th joins, then
// one is killed with -9. After each rebalance every partition has exactly
// one owner, and every acknowledged record is consumed.
func TestGroupMembersSharePartitions(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "500ms")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "shared", 6, nil)
	prod := startSteadyProducer(t, b.Addr, "shared")
	var members []*memberProc
	for i := 1; i <= 3; i++ {
		members = append(members, startMember(t, b.Addr, "g", "shared", "m"+string(rune('0'+i)), 3*time.Second))
	}
	gen3 := stableAssignment(t, members, 6)
	for _, m := range members {
		if _, parts, _ := m.lastAssignment(); len(parts) != 2 {
			t.Fatalf("%s owns %v with 3 members on 6 partitions", m.name, parts)
		}
	}
	members = append(members, startMember(t, b.Addr, "g", "shared", "m4", 3*time.Second))
	gen4 := stableAssignment(t, members, 6)
	if gen4 <= gen3 {
		t.Fatalf("generation %d after a member joined, was %d", gen4, gen3)
	}
	members[1].kill9()
	live := []*memberProc{members[0], members[2], members[3]}
	gen5 := stableAssignment(t, live, 6)
	if gen5 <= gen4 {
		t.Fatalf("generation %d after a member died, was %d", gen5, gen4)
	}
	time.Sleep(500 * time.Millisecond) // a little more traffic in the last generation
	prod.finish()
	sent := prod.values()
	waitConsumed(t, members, sent)
	checkExclusive(t, members)
	dups := 0
	for _, n := range consumedValues(members) {
		dups += n - 1
	}
	t.Logf("%d records, generations %d/%d/%d, %d consumed twice (across rebalances)", len(sent), gen3, gen4, gen5, dups)

	// The CLI sees the group and its committed offsets.
	out, errOut, code := runCLI(t, "", "group", "describe", "g", "--broker", b.Addr)
	if code != 0 || !strings.Contains(out, "Stable") || !strings.Contains(out, "shared") {
		t.Fatalf("group describe: %d %s %s", code, out, errOut)
	}
	if out, _, _ := runCLI(t, "", "group", "list", "--broker", b.Addr); !strings.Contains(out, "g ") {
		t.Fatalf("group list: %s", out)
	}
}

// A member paused past its session timeout (a zombie) is evicted; resumed,
// its commit is refused with ILLEGAL_GENERATION.
func TestGroupZombieCannotCommit(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "300ms")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "zz", 6, nil)
	prod := startSteadyProducer(t, b.Addr, "zz")
	defer prod.finish()
	zombie := startMember(t, b.Addr, "gz", "zz", "zombie", 2*time.Second, "SLUICE_MEMBER_COMMIT=revoke")
	other := startMember(t, b.Addr, "gz", "zz", "other", 2*time.Second)
	gen := stableAssignment(t, []*memberProc{zombie, other}, 6)
	// Let the zombie consume (and not commit) something in its generation.
	waitEvent(t, zombie, func(e memberEvent) bool { return e.Ev == "rec" && e.Generation == gen })
	zombie.pause()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, parts, ok := other.lastAssignment()
		if ok && g > gen && len(parts) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group did not move on without the paused member")
		}
		time.Sleep(50 * time.Millisecond)
	}
	zombie.resume()
	e := waitEvent(t, zombie, func(e memberEvent) bool { return e.Ev == "commit_err" })
	if e.Generation != gen || !strings.Contains(e.Err, "ILLEGAL_GENERATION") {
		t.Fatalf("zombie's commit: generation %d, %q; want generation %d refused with ILLEGAL_GENERATION", e.Generation, e.Err, gen)
	}
	// And it comes back as a member in a later generation.
	stableAssignment(t, []*memberProc{zombie, other}, 6)
}

func waitEvent(t *testing.T, m *memberProc, match func(memberEvent) bool) memberEvent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range m.events() {
			if match(e) {
				return e
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never printed the awaited event; it printed %d events", m.name, len(m.events()))
	return memberEvent{}
}

// kill -9 the coordinator's broker: the committed offsets are all on the
// new coordinator, and the members carry on committing through it. Then
// the members die too (kill -9: no leave, no last commit), and fresh member
// processes resume exactly at the committed offsets: nothing below them is
// read again, nothing above them skipped.
func TestGroupCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, "--group-initial-rebalance-delay", "300ms", "--offsets-partitions", "4")
	c.createTopic("orders", 6, 3, nil)
	prod := startSteadyProducer(t, c.seeds(), "orders")
	members := []*memberProc{
		startMember(t, c.seeds(), "gf", "orders", "a", 4*time.Second),
		startMember(t, c.seeds(), "gf", "orders", "b", 4*time.Second),
	}
	stableAssignment(t, members, 6)
	var before *groupState
	c.waitFor("commits on every partition", time.Minute, func() bool {
		before = describeGroup(c.admin, "gf", 6)
		return before != nil && before.allCommittedAbove(map[int32]int64{})
	})
	victim := before.coordinator
	seenBefore := map[*memberProc]int{}
	for _, m := range members {
		seenBefore[m] = len(m.events())
	}
	c.brokers[victim].kill9()
	var after *groupState
	c.waitFor("a new coordinator", time.Minute, func() bool {
		after = describeGroup(c.admin, "gf", 6)
		return after != nil && after.coordinator != victim
	})
	for p, off := range before.committed {
		if after.committed[p] < off {
			t.Fatalf("partition %d: committed %d on the new coordinator, %d before", p, after.committed[p], off)
		}
	}
	c.waitFor("the members committing through the new coordinator", time.Minute, func() bool {
		s := describeGroup(c.admin, "gf", 6)
		return s != nil && s.allCommittedAbove(after.committed)
	})
	// Records below the offsets committed before the failover are not
	// consumed again afterwards: the members kept their positions.
	for _, m := range members {
		for _, e := range m.events()[seenBefore[m]:] {
			if e.Ev == "rec" && e.Offset < before.committed[e.Partition] {
				t.Errorf("%s consumed partition %d offset %d after the failover, below the commit %d", m.name, e.Partition, e.Offset, before.committed[e.Partition])
			}
		}
	}

	// The members die; once the coordinator has evicted them, nothing
	// commits until fresh members join and read the commits.
	for _, m := range members {
		m.kill9()
	}
	var atDeath *groupState
	c.waitFor("the dead members evicted", time.Minute, func() bool {
		atDeath = describeGroup(c.admin, "gf", 6)
		return atDeath != nil && len(atDeath.members) == 0
	})
	fresh := []*memberProc{
		startMember(t, c.seeds(), "gf", "orders", "c", 4*time.Second),
		startMember(t, c.seeds(), "gf", "orders", "d", 4*time.Second),
	}
	stableAssignment(t, fresh, 6)
	prod.finish()
	all := append(slices.Clone(members), fresh...)
	waitConsumed(t, all, prod.values())
	checkExclusive(t, all)
	final := describeGroup(c.admin, "gf", 6)
	if final == nil {
		t.Fatal("cannot describe the group at the end")
	}
	first := map[int32]int64{} // lowest offset the fresh members read per partition
	for _, m := range fresh {
		for _, e := range m.events() {
			if e.Ev != "rec" {
				continue
			}
			if prev, ok := first[e.Partition]; !ok || e.Offset < prev {
				first[e.Partition] = e.Offset
			}
		}
	}
	for p := int32(0); p < 6; p++ {
		got, read := first[p]
		switch {
		case read && got != atDeath.committed[p]:
			t.Errorf("partition %d: fresh members started at %d, the commit was %d", p, got, atDeath.committed[p])
		case !read && atDeath.committed[p] != final.end[p]:
			t.Errorf("partition %d: fresh members read nothing from the commit %d to the end %d", p, atDeath.committed[p], final.end[p])
		}
	}
	t.Logf("coordinator %d killed; commits before %v, when the members died %v", victim, before.committed, atDeath.committed)
}

// A push subscriber that processes slowly is never pushed more than its
// credit: at every PushRecords, the records received so far are at most the
// initial credit plus the credit granted so far. It gets every record, and
// its acks are committed.
func TestPushSubscriberCredit(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "pushed", 3, nil)
	const n, credit = 2000, 25
	sent := produceValues(t, b.Addr, "pushed", "v", n)
	counter := newPushSubscriber(credit, 200*time.Microsecond)
	pid, _ := spawnSubscriber(t, counter, b.Addr, "pg", []string{"pushed"})
	waitFor(t, "every record processed", func() bool { return missingValues(sent, counter) == 0 })
	counter.checkCredit(t)
	counter.mu.Lock()
	maxHeld, pushers := counter.maxHeld, len(counter.pushers)
	counter.mu.Unlock()
	// The backlog filled the window: a broker pushing past the credit
	// would have been caught.
	if maxHeld != credit || pushers != 1 {
		t.Fatalf("at most %d records held at once from %d pushers, want a full window of %d from one", maxHeld, pushers, credit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitFor(t, "push acks committed", func() bool {
		info, err := a.DescribeGroup(ctx, "pg")
		if err != nil || len(info.Partitions) != 3 {
			return false
		}
		var committed int64
		for _, p := range info.Partitions {
			committed += max(p.Committed, 0)
		}
		return committed == n
	})
	// A dead subscriber actor leaves the group.
	system, _ := client.System()
	system.Root.Stop(pid)
	waitFor(t, "the dead subscriber removed", func() bool {
		info, err := a.DescribeGroup(ctx, "pg")
		return err == nil && len(info.Members) == 0
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 60*time.Second, what, cond)
}
