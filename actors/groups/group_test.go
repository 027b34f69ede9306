package groups

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"
)

// stable returns a Stable group of generation 1 with members a-1 and b-2
// (client ids a and b) on topic t (4 partitions).
func stable(t *testing.T) (*Group, counts) {
	t.Helper()
	c := counts{"t": 4}
	g := New(testConfig())
	// Two joins before either completes: with no initial delay the first
	// join completes alone, so the second starts a rebalance the first
	// member must rejoin.
	g.Join(pull("", "a", "t"), t0, c.fn())
	g.Join(pull("", "b", "t"), t0, c.fn())
	out := g.Join(pull("a-1", "a", "t"), t0, c.fn())
	if g.State() != Stable || g.Generation() != 2 || len(out.Replies) != 2 {
		t.Fatalf("setup: state %v generation %d outcome %+v", g.State(), g.Generation(), out)
	}
	return g, c
}

func TestJoinChecks(t *testing.T) {
	c := counts{"t": 2}
	bad := func(f func(*JoinRequest)) JoinRequest {
		r := pull("", "x", "t")
		f(&r)
		return r
	}
	cases := []struct {
		name string
		req  JoinRequest
		want Code
	}{
		{"session timeout below min", bad(func(r *JoinRequest) { r.SessionTimeout = ms(99) }), InvalidSessionTimeout},
		{"session timeout above max", bad(func(r *JoinRequest) { r.SessionTimeout = time.Minute + 1 }), InvalidSessionTimeout},
		{"no assignor in common", bad(func(r *JoinRequest) { r.Assignors = []string{"sticky"} }), InconsistentGroupProtocol},
		{"only assignors not implemented", bad(func(r *JoinRequest) { r.Assignors = []string{"cooperative-sticky"} }), InconsistentGroupProtocol},
		{"unknown member id", pull("ghost-9", "x", "t"), UnknownMemberID},
		{"push member needs no session timeout", pushReq("p", "t"), None},
		{"new member with range among others", bad(func(r *JoinRequest) { r.Assignors = []string{"sticky", "range"} }), None},
		{"empty assignor list means the default (range)", bad(func(r *JoinRequest) { r.Assignors = nil }), None},
	}
	for _, tc := range cases {
		g, _ := stable(t)
		out := g.Join(tc.req, t0, c.fn())
		if out.Code != tc.want {
			t.Errorf("%s: code %v, want %v", tc.name, out.Code, tc.want)
		}
		if tc.want != None && (g.State() != Stable || len(out.Replies) > 0) {
			t.Errorf("%s: a refused join changed the group: %v %+v", tc.name, g.State(), out)
		}
	}
}

func TestJoinOfEmptyGroupAcceptsAnyAssignor(t *testing.T) {
	g := New(testConfig())
	req := pull("", "x", "t")
	req.Assignors = []string{"cooperative-sticky", "sticky"}
	out := g.Join(req, t0, counts{"t": 1}.fn())
	if r := replyFor(t, out, "x-1"); r.Code != None || r.Assignor != "sticky" || r.Generation != 1 {
		t.Fatalf("%+v", out)
	}
}

func TestMemberIDs(t *testing.T) {
	g := New(testConfig())
	var got []string
	for _, client := range []string{"a", "a", "", "b"} {
		got = append(got, g.Join(pull("", client, "t"), t0, nil).MemberID)
	}
	if want := []string{"a-1", "a-2", "member-3", "b-4"}; !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}

	cfg := testConfig()
	cfg.NewMemberID = func(client string, seq uint64) string { return fmt.Sprintf("%s-%d", client, seq/2) }
	g = New(cfg)
	first := g.Join(pull("", "a", "t"), t0, nil).MemberID  // seq 1 -> a-0
	second := g.Join(pull("", "a", "t"), t0, nil).MemberID // seq 2 -> a-1
	third := g.Join(pull("", "a", "t"), t0, nil).MemberID  // seq 3 -> a-1 in use, seq 4 -> a-2
	if first != "a-0" || second != "a-1" || third != "a-2" {
		t.Fatalf("injected ids %s %s %s", first, second, third)
	}
}

func TestRequireMemberID(t *testing.T) {
	cfg := testConfig()
	cfg.RequireMemberID = true
	g := New(cfg)
	c := counts{"t": 2}
	out := g.Join(pull("", "a", "t"), t0, c.fn())
	if out.Code != MemberIDRequired || out.MemberID != "a-1" || g.State() != Empty {
		t.Fatalf("first join: %+v, state %v", out, g.State())
	}
	out = g.Join(pull("a-1", "a", "t"), t0, c.fn())
	if r := replyFor(t, out, "a-1"); out.Code != None || r.Generation != 1 {
		t.Fatalf("rejoin with the given id: %+v", out)
	}
	// A pending id expires after its session timeout.
	out = g.Join(pull("", "b", "t"), t0, c.fn())
	g.Tick(t0.Add(time.Second+1), c.fn())
	if again := g.Join(pull(out.MemberID, "b", "t"), t0.Add(time.Second+1), c.fn()); again.Code != UnknownMemberID {
		t.Fatalf("expired pending id: %+v", again)
	}
	// Push members are not asked.
	if p := g.Join(pushReq("p", "t"), t0, c.fn()); p.Code != None || p.MemberID == "" {
		t.Fatalf("push join: %+v", p)
	}
	// Leave forgets a pending id.
	out = g.Join(pull("", "c", "t"), t0, c.fn())
	if l := g.Leave(out.MemberID, t0, c.fn()); l.Code != None || l.Persist {
		t.Fatalf("leave of a pending id: %+v", l)
	}
	if again := g.Join(pull(out.MemberID, "c", "t"), t0, c.fn()); again.Code != UnknownMemberID {
		t.Fatalf("left pending id: %+v", again)
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = ms(300)
	c := counts{"t": 6}
	g := New(cfg)
	req := func(client string) JoinRequest {
		r := pull("", client, "t")
		r.RebalanceTimeout = ms(800)
		return r
	}
	if out := g.Join(req("a"), t0, c.fn()); len(out.Replies) != 0 || g.State() != PreparingRebalance {
		t.Fatalf("first join completed at once: %+v", out)
	}
	g.Join(req("b"), t0.Add(ms(200)), c.fn()) // extends the delay to 500 ms
	if out := g.Tick(t0.Add(ms(300)), c.fn()); out.Rebalanced {
		t.Fatalf("completed before the extended delay: %+v", out)
	}
	g.Join(req("c"), t0.Add(ms(450)), c.fn()) // to 750 ms
	g.Join(req("d"), t0.Add(ms(700)), c.fn()) // to 1000 ms, capped at 800 ms
	if out := g.Tick(t0.Add(ms(799)), c.fn()); out.Rebalanced {
		t.Fatalf("completed before the cap: %+v", out)
	}
	out := g.Tick(t0.Add(ms(800)), c.fn())
	if !out.Rebalanced || !out.Persist || len(out.Replies) != 4 || g.Generation() != 1 || g.State() != Stable {
		t.Fatalf("at the cap: %+v, generation %d", out, g.Generation())
	}
	checkCovers(t, g, c)
	// Only an Empty group waits: a join to a Stable group completes as soon
	// as everyone has rejoined.
	g.Join(req("e"), t0.Add(ms(900)), c.fn())
	for _, id := range []string{"a-1", "b-2", "c-3"} {
		g.Join(pull(id, "x", "t"), t0.Add(ms(900)), c.fn())
	}
	if out := g.Join(pull("d-4", "d", "t"), t0.Add(ms(900)), c.fn()); !out.Rebalanced || g.Generation() != 2 {
		t.Fatalf("rejoin of a Stable group waited: %+v", out)
	}
}

func TestRebalanceCompletesWhenAllRejoin(t *testing.T) {
	g, c := stable(t)
	out := g.Join(pull("", "c", "t"), t0.Add(ms(10)), c.fn())
	if out.Code != None || out.MemberID != "c-3" || len(out.Replies) != 0 || g.State() != PreparingRebalance {
		t.Fatalf("new member: %+v state %v", out, g.State())
	}
	if code := g.Heartbeat("a-1", 2, t0.Add(ms(20))); code != RebalanceInProgress {
		t.Fatalf("heartbeat while rebalancing: %v", code)
	}
	if out := g.Join(pull("a-1", "a", "t"), t0.Add(ms(30)), c.fn()); len(out.Replies) != 0 {
		t.Fatalf("completed before b rejoined: %+v", out)
	}
	out = g.Join(pull("b-2", "b", "t"), t0.Add(ms(40)), c.fn())
	if !out.Rebalanced || !out.Persist || g.Generation() != 3 || g.State() != Stable || len(out.Replies) != 3 {
		t.Fatalf("all rejoined: %+v", out)
	}
	replyTo := map[string]any{"a-1": "a/a-1", "b-2": "b/b-2", "c-3": "c/"}
	for _, r := range out.Replies {
		if r.Code != None || r.Generation != 3 || r.LeaderID != "a-1" || r.Assignor != "range" ||
			!slices.Equal(r.Members, []string{"a-1", "b-2", "c-3"}) || r.ReplyTo != replyTo[r.MemberID] {
			t.Errorf("reply %+v", r)
		}
		if a, code := g.Sync(r.MemberID, 3, t0.Add(ms(50))); code != None || !equalAssignment(a, r.Assignment) {
			t.Errorf("sync of %s: %v %v, reply said %v", r.MemberID, a, code, r.Assignment)
		}
	}
	// range over 4 partitions: a-1 keeps [0 1], b-2 [2 3] -> [2], c-3 [3].
	if !slices.Equal(out.Changed, []string{"b-2", "c-3"}) {
		t.Fatalf("changed %v", out.Changed)
	}
	checkCovers(t, g, c)
}

func TestRebalanceDeadlineRemovesMembersThatDidNotRejoin(t *testing.T) {
	g, c := stable(t)
	start := t0.Add(ms(10))
	g.Join(pull("a-1", "a", "t"), start, c.fn())
	// b keeps heartbeating but never rejoins; the deadline is the largest
	// rebalance timeout (3 s) after the start.
	for d := ms(0); d < 3*time.Second; d += ms(100) {
		g.Heartbeat("b-2", 2, start.Add(d))
		if out := g.Tick(start.Add(d), c.fn()); out.Rebalanced {
			t.Fatalf("completed at %v before the deadline: %+v", d, out)
		}
	}
	out := g.Tick(start.Add(3*time.Second), c.fn())
	if !out.Rebalanced || !slices.Equal(out.Removed, []string{"b-2"}) || g.Generation() != 3 {
		t.Fatalf("deadline: %+v", out)
	}
	if r := replyFor(t, out, "a-1"); !slices.Equal(r.Members, []string{"a-1"}) || countOf(r.Assignment) != 4 {
		t.Fatalf("a's reply %+v", r)
	}
	// A parked join counts as alive, however long the rebalance takes, and
	// the session starts afresh when the generation is formed.
	if out := g.Tick(start.Add(3*time.Second+ms(999)), c.fn()); len(out.Removed) != 0 {
		t.Fatalf("evicted right after the rebalance: %+v", out)
	}
}

func TestSupersededJoinIsAnswered(t *testing.T) {
	g, c := stable(t)
	first := pull("a-1", "a", "t")
	first.ReplyTo = "first"
	g.Join(first, t0, c.fn())
	second := pull("a-1", "a", "t")
	second.ReplyTo = "second"
	out := g.Join(second, t0, c.fn())
	if len(out.Replies) != 1 || out.Replies[0].ReplyTo != "first" || out.Replies[0].Code != RebalanceInProgress {
		t.Fatalf("superseded join: %+v", out)
	}
	out = g.Join(pull("b-2", "b", "t"), t0, c.fn())
	if r := replyFor(t, out, "a-1"); r.ReplyTo != "second" || r.Code != None {
		t.Fatalf("the newer join is the one answered: %+v", r)
	}
}

func TestSyncAndHeartbeat(t *testing.T) {
	cases := []struct {
		name       string
		prepare    func(*Group, counts)
		member     string
		generation int32
		want       Code
	}{
		{"stable member", nil, "a-1", 2, None},
		{"old generation", nil, "a-1", 1, IllegalGeneration},
		{"newer generation", nil, "a-1", 3, IllegalGeneration},
		{"unknown member", nil, "z-9", 2, UnknownMemberID},
		{"unknown member, old generation: generation first", nil, "z-9", 1, IllegalGeneration},
		{"rebalancing", func(g *Group, c counts) { g.PartitionsChanged(t0, c.fn()) }, "b-2", 2, RebalanceInProgress},
		{"left", func(g *Group, c counts) { g.Leave("b-2", t0, c.fn()) }, "b-2", 2, UnknownMemberID},
	}
	for _, tc := range cases {
		for _, op := range []string{"sync", "heartbeat"} {
			g, c := stable(t)
			if tc.prepare != nil {
				tc.prepare(g, c)
			}
			var code Code
			var a []TopicPartitions
			if op == "sync" {
				a, code = g.Sync(tc.member, tc.generation, t0)
			} else {
				code = g.Heartbeat(tc.member, tc.generation, t0)
			}
			if code != tc.want {
				t.Errorf("%s %s: %v, want %v", op, tc.name, code, tc.want)
			}
			if op == "sync" && code == None && countOf(a) != 2 {
				t.Errorf("sync %s: assignment %v", tc.name, a)
			}
		}
	}
}

func TestHeartbeatKeepsAlive(t *testing.T) {
	g, c := stable(t)
	for at := ms(0); at <= 5*time.Second; at += ms(500) {
		now := t0.Add(at)
		g.Heartbeat("a-1", 2, now)
		if _, code := g.Sync("b-2", 2, now); code != None {
			t.Fatalf("sync at %v: %v", at, code)
		}
		if out := g.Tick(now, c.fn()); len(out.Removed) != 0 {
			t.Fatalf("evicted at %v: %+v", at, out)
		}
	}
	// a goes silent: evicted once its 1 s session timeout has passed.
	last := t0.Add(5 * time.Second)
	g.Heartbeat("b-2", 2, last.Add(time.Second))
	if out := g.Tick(last.Add(time.Second), c.fn()); len(out.Removed) != 0 {
		t.Fatalf("evicted at exactly the session timeout: %+v", out)
	}
	out := g.Tick(last.Add(time.Second+1), c.fn())
	if !slices.Equal(out.Removed, []string{"a-1"}) || !out.Persist || g.State() != PreparingRebalance {
		t.Fatalf("eviction: %+v state %v", out, g.State())
	}
}

func TestCommitCheck(t *testing.T) {
	cases := []struct {
		name       string
		prepare    func(*Group, counts)
		member     string
		generation int32
		want       Code
	}{
		{"member of the current generation", nil, "a-1", 2, None},
		{"admin commit to a group with members", nil, "", -1, NonEmptyGroup},
		{"admin commit to an empty group", func(g *Group, c counts) {
			g.Leave("a-1", t0, c.fn())
			g.Leave("b-2", t0, c.fn())
		}, "", -1, None},
		{"zombie with an old generation", nil, "gone-7", 1, IllegalGeneration},
		{"member with an old generation", nil, "a-1", 1, IllegalGeneration},
		{"generation -1 with a member id", nil, "a-1", -1, IllegalGeneration},
		{"unknown member, current generation", nil, "gone-7", 2, UnknownMemberID},
		{"empty member id, current generation", nil, "", 2, UnknownMemberID},
		{"member while a rebalance is prepared (Kafka allows)", func(g *Group, c counts) {
			g.Join(pull("", "c", "t"), t0, c.fn())
		}, "a-1", 2, None},
		{"member that left", func(g *Group, c counts) { g.Leave("a-1", t0, c.fn()) }, "a-1", 2, UnknownMemberID},
	}
	for _, tc := range cases {
		g, c := stable(t)
		if tc.prepare != nil {
			tc.prepare(g, c)
		}
		if got := g.CommitCheck(tc.member, tc.generation); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLeave(t *testing.T) {
	g, c := stable(t)
	if out := g.Leave("z-9", t0, c.fn()); out.Code != UnknownMemberID || out.Persist {
		t.Fatalf("unknown: %+v", out)
	}
	out := g.Leave("b-2", t0, c.fn())
	if out.Code != None || !out.Persist || !slices.Equal(out.Removed, []string{"b-2"}) || g.State() != PreparingRebalance {
		t.Fatalf("leave: %+v state %v", out, g.State())
	}
	if _, ok := g.Member("b-2"); ok {
		t.Fatal("b-2 still a member")
	}
	// A new member c parks its join; c leaves before a has rejoined: its
	// parked join is answered UNKNOWN_MEMBER_ID. Then a alone completes.
	cJoin := g.Join(pull("", "c", "t"), t0, c.fn())
	if len(cJoin.Replies) != 0 {
		t.Fatalf("completed without a: %+v", cJoin)
	}
	out = g.Leave(cJoin.MemberID, t0, c.fn())
	if r := replyFor(t, out, cJoin.MemberID); r.Code != UnknownMemberID || r.ReplyTo != "c/" || len(out.Replies) != 1 {
		t.Fatalf("c's parked join: %+v", out)
	}
	out = g.Join(pull("a-1", "a", "t"), t0, c.fn())
	if r := replyFor(t, out, "a-1"); r.Code != None || r.Generation != 3 || countOf(r.Assignment) != 4 {
		t.Fatalf("a's join: %+v", r)
	}
	// The last member leaves: Empty, and the generation ends.
	out = g.Leave("a-1", t0, c.fn())
	if g.State() != Empty || g.Generation() != 4 || !out.Persist || !out.Rebalanced {
		t.Fatalf("last leave: %+v state %v generation %d", out, g.State(), g.Generation())
	}
	if d := g.Describe(); d.Leader != "" || d.Assignor != "" || len(d.Members) != 0 {
		t.Fatalf("empty group described as %+v", d)
	}
}

func TestPushMembers(t *testing.T) {
	c := counts{"t": 4}
	g := New(testConfig())
	out := g.Join(pushReq("p", "t"), t0, c.fn())
	if r := replyFor(t, out, "p-1"); r.Generation != 1 || countOf(r.Assignment) != 4 || !slices.Equal(out.Changed, []string{"p-1"}) {
		t.Fatalf("push subscribe: %+v", out)
	}
	// Never evicted by time.
	if out := g.Tick(t0.Add(time.Hour), c.fn()); len(out.Removed) != 0 {
		t.Fatalf("push member evicted: %+v", out)
	}
	// A pull member joins: the push member rejoins by itself.
	out = g.Join(pull("", "a", "t"), t0.Add(time.Hour), c.fn())
	if !out.Rebalanced || g.Generation() != 2 || !slices.Equal(out.Changed, []string{"p-1", "a-2"}) && !slices.Equal(out.Changed, []string{"a-2", "p-1"}) {
		t.Fatalf("pull joins a push member: %+v", out)
	}
	checkCovers(t, g, c)
	// Partition change: a push-only part is not enough, a must rejoin.
	g.PartitionsChanged(t0.Add(time.Hour), c.fn())
	if g.State() != PreparingRebalance {
		t.Fatal("no rebalance")
	}
	g.Leave("a-2", t0.Add(time.Hour), c.fn())
	if g.State() != Stable || g.Generation() != 3 {
		t.Fatalf("push member alone did not complete: %v %d", g.State(), g.Generation())
	}
}

func TestPartitionCountChanges(t *testing.T) {
	g, c := stable(t)
	if out := g.Tick(t0.Add(ms(100)), c.fn()); g.State() != Stable || out.Persist {
		t.Fatalf("tick with nothing changed: %+v", out)
	}
	c["t"] = 6
	g.Tick(t0.Add(ms(200)), c.fn())
	if g.State() != PreparingRebalance {
		t.Fatal("tick did not notice the new partitions")
	}
	g.Join(pull("a-1", "a", "t"), t0.Add(ms(300)), c.fn())
	g.Join(pull("b-2", "b", "t"), t0.Add(ms(300)), c.fn())
	checkCovers(t, g, c)
	if g.Generation() != 3 {
		t.Fatalf("generation %d", g.Generation())
	}
	// A topic appears that a member subscribes to.
	g.Join(pull("a-1", "a", "t", "u"), t0.Add(ms(400)), c.fn())
	g.Join(pull("b-2", "b", "t"), t0.Add(ms(400)), c.fn())
	c["u"] = 2
	if out := g.PartitionsChanged(t0.Add(ms(500)), c.fn()); g.State() != PreparingRebalance || out.Rebalanced {
		t.Fatalf("partitions changed: %+v", out)
	}
	g.Join(pull("a-1", "a", "t", "u"), t0.Add(ms(600)), c.fn())
	g.Join(pull("b-2", "b", "t"), t0.Add(ms(600)), c.fn())
	checkCovers(t, g, c)
	if m, _ := g.Member("a-1"); !slices.ContainsFunc(m.Assignment, func(x TopicPartitions) bool { return x.Topic == "u" }) {
		t.Fatalf("a-1 got nothing of u: %v", m.Assignment)
	}
	if out := g.PartitionsChanged(t0, c.fn()); g.State() != PreparingRebalance || out.Persist {
		// Stable -> PreparingRebalance; while rebalancing it is a no-op.
		t.Fatalf("%+v", out)
	}
}

func TestAssignorVote(t *testing.T) {
	cases := []struct {
		name  string
		prefs [][]string // members a-1, b-2, ... in join order; a-1 leads
		want  string
	}{
		{"one member", [][]string{{"sticky", "range"}}, "sticky"},
		{"majority", [][]string{{"range", "sticky"}, {"sticky", "range"}, {"sticky", "range"}}, "sticky"},
		{"only common one", [][]string{{"sticky", "range"}, {"range"}}, "range"},
		{"tie goes to the leader's preference", [][]string{{"roundrobin", "sticky"}, {"sticky", "roundrobin"}}, "roundrobin"},
		{"votes only among common ones", [][]string{{"sticky", "roundrobin", "range"}, {"range", "roundrobin"}, {"roundrobin", "range"}}, "roundrobin"},
	}
	for _, tc := range cases {
		g := New(testConfig())
		var ids []string
		for i, p := range tc.prefs {
			r := pull("", string(rune('a'+i)), "t")
			r.Assignors = p
			ids = append(ids, g.Join(r, t0, nil).MemberID)
		}
		// a-1 completed generation 1 alone; the others' joins started a
		// second round that waits for a-1 only.
		var out Outcome
		if len(ids) > 1 {
			r := pull("a-1", "a", "t")
			r.Assignors = tc.prefs[0]
			out = g.Join(r, t0, nil)
		}
		if g.State() != Stable {
			t.Fatalf("%s: %v %+v", tc.name, g.State(), out)
		}
		if d := g.Describe(); d.Assignor != tc.want || d.Leader != "a-1" {
			t.Errorf("%s: assignor %q leader %q, want %q a-1", tc.name, d.Assignor, d.Leader, tc.want)
		}
	}
}

func TestSnapshotAndRestore(t *testing.T) {
	g, c := stable(t)
	g.Join(pull("", "c", "t"), t0, c.fn()) // c-3 joins, a and b rejoin
	g.Join(pull("a-1", "a", "t"), t0, c.fn())
	g.Join(pull("b-2", "b", "t"), t0, c.fn())
	snap := g.Snapshot()
	if snap.Generation != 3 || snap.Leader != "a-1" || snap.Assignor != "range" || len(snap.Members) != 3 {
		t.Fatalf("snapshot %+v", snap)
	}
	later := t0.Add(time.Hour)
	r := Restore(testConfig(), snap, later, c.fn())
	if r.State() != Stable || r.Generation() != 3 {
		t.Fatalf("restored %v generation %d", r.State(), r.Generation())
	}
	for _, m := range snap.Members {
		got, _ := r.Member(m.MemberID)
		if !equalAssignment(got.Assignment, m.Assignment) || got.SessionTimeout != m.SessionTimeout {
			t.Fatalf("%s restored as %+v, was %+v", m.MemberID, got, m)
		}
		if code := r.Heartbeat(m.MemberID, 3, later.Add(ms(500))); code != None {
			t.Fatalf("heartbeat of restored %s: %v", m.MemberID, code)
		}
	}
	// A member that never finds the new coordinator gets a full session.
	if out := r.Tick(later.Add(time.Second), c.fn()); len(out.Removed) != 0 {
		t.Fatalf("evicted within a session of the restore: %+v", out)
	}
	// Mutating the snapshot does not reach the group.
	snap.Members[0].Assignment[0].Partitions[0] = 99
	if m, _ := r.Member("a-1"); m.Assignment[0].Partitions[0] == 99 {
		t.Fatal("restore aliases the snapshot")
	}

	// A snapshot written after a leave, mid-rebalance: the assignment no
	// longer covers the topic, so the restored group rebalances.
	g.Leave("c-3", t0, c.fn())
	r = Restore(testConfig(), g.Snapshot(), later, c.fn())
	if r.State() != PreparingRebalance || r.Generation() != 3 {
		t.Fatalf("restored mid-rebalance: %v generation %d", r.State(), r.Generation())
	}
	// So does one whose partitions changed during the failover.
	c2 := counts{"t": 8}
	if r = Restore(testConfig(), snap, later, c2.fn()); r.State() != PreparingRebalance {
		t.Fatalf("restored with changed partitions: %v", r.State())
	}
	if r = Restore(testConfig(), Snapshot{Generation: 7}, later, c.fn()); r.State() != Empty || r.Generation() != 7 {
		t.Fatalf("empty snapshot restored as %v %d", r.State(), r.Generation())
	}
}

func TestDescribe(t *testing.T) {
	g, _ := stable(t)
	d := g.Describe()
	if d.State.String() != "Stable" || d.Generation != 2 || d.Leader != "a-1" || d.Assignor != "range" || len(d.Members) != 2 {
		t.Fatalf("%+v", d)
	}
	if m := d.Members[1]; m.MemberID != "b-2" || m.ClientID != "b" || !slices.Equal(m.Topics, []string{"t"}) || countOf(m.Assignment) != 2 {
		t.Fatalf("member %+v", m)
	}
	for s, want := range map[State]string{Empty: "Empty", PreparingRebalance: "PreparingRebalance", Stable: "Stable"} {
		if s.String() != want {
			t.Errorf("%d: %s", s, s)
		}
	}
}

// Every Code's name is an ErrorCode of the protobuf, since the actor maps
// by name.
func TestCodeNamesMatchTheProto(t *testing.T) {
	proto, err := os.ReadFile("../../messages/sluice.proto")
	if err != nil {
		t.Skip(err)
	}
	enum := regexp.MustCompile(`(?s)enum ErrorCode \{(.*?)\}`).FindSubmatch(proto)
	if enum == nil {
		t.Fatal("no ErrorCode enum in sluice.proto")
	}
	for c := None; c <= MemberIDRequired; c++ {
		if !regexp.MustCompile(`\b` + c.String() + ` = \d+;`).Match(enum[1]) {
			t.Errorf("%s is not an ErrorCode", c)
		}
	}
}

// A push member's ack counts only for a partition it has owned without a
// break since the generation of the records acknowledged.
func TestAckCheck(t *testing.T) {
	c := counts{"t": 4}
	g := New(testConfig())
	p := pushReq("p", "t")
	p.Push.Credit = 7
	g.Join(p, t0, c.fn()) // p-1 owns t 0-3 in generation 1
	check := func(step, member string, gen int32, partition int32, want Code) {
		t.Helper()
		if got := g.AckCheck(member, gen, "t", partition); got != want {
			t.Errorf("%s: ack of %s generation %d partition %d: %v, want %v", step, member, gen, partition, got, want)
		}
	}
	check("alone", "p-1", 1, 0, None)
	check("alone", "p-1", 0, 0, IllegalGeneration)
	check("alone", "p-1", 2, 0, IllegalGeneration) // ahead of the group
	check("alone", "p-1", 1, 9, IllegalGeneration) // no such partition
	check("alone", "x-9", 1, 0, UnknownMemberID)

	g.Join(pushReq("q", "t"), t0, c.fn()) // generation 2: p-1 keeps 0-1, q-2 gets 2-3
	if m, _ := g.Member("q-2"); g.Generation() != 2 || !slices.Equal(fromAssignment(m.Assignment), []tp{{"t", 2}, {"t", 3}}) {
		t.Fatalf("generation %d, q-2 owns %v", g.Generation(), m.Assignment)
	}
	check("kept", "p-1", 1, 0, None) // a late ack of a partition p-1 kept
	check("moved", "p-1", 1, 2, IllegalGeneration)
	check("moved", "p-1", 2, 2, IllegalGeneration)
	check("new owner", "q-2", 2, 2, None)
	check("new owner", "q-2", 1, 2, IllegalGeneration) // q-2 did not own it then

	g.Leave("q-2", t0, c.fn())                    // generation 3: p-1 owns 0-3 again
	check("back", "p-1", 1, 2, IllegalGeneration) // q-2 owned it in between
	check("back", "p-1", 3, 2, None)
	check("back", "p-1", 1, 0, None)
	check("left", "q-2", 2, 2, UnknownMemberID)

	// A new coordinator knows ownership from the snapshot's generation on,
	// and the subscription's credit.
	r := Restore(testConfig(), g.Snapshot(), t0, c.fn())
	if got := r.AckCheck("p-1", 3, "t", 0); got != None {
		t.Errorf("restored: ack of generation 3: %v", got)
	}
	if got := r.AckCheck("p-1", 2, "t", 0); got != IllegalGeneration {
		t.Errorf("restored: ack of generation 2: %v", got)
	}
	if m, _ := r.Member("p-1"); m.Push != (PushTarget{Address: "127.0.0.1:9", ID: "p", Credit: 7}) {
		t.Errorf("restored push target %+v", m.Push)
	}
}

// A group takes at most MaxSize members (those asked to rejoin with their
// new id count too); a member already in rejoins whatever the size.
func TestGroupMaxSize(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize, cfg.RequireMemberID = 2, true
	g := New(cfg)
	c := counts{"t": 2}
	first := g.Join(pull("", "a", "t"), t0, c.fn())
	second := g.Join(pull("", "b", "t"), t0, c.fn())
	if first.Code != MemberIDRequired || second.Code != MemberIDRequired {
		t.Fatalf("first joins: %v %v", first.Code, second.Code)
	}
	if out := g.Join(pull("", "c", "t"), t0, c.fn()); out.Code != GroupMaxSizeReached {
		t.Fatalf("a third member: %v, want GROUP_MAX_SIZE_REACHED", out.Code)
	}
	for _, id := range []string{first.MemberID, second.MemberID} {
		if out := g.Join(pull(id, "x", "t"), t0, c.fn()); out.Code != None {
			t.Fatalf("rejoin of %s: %v", id, out.Code)
		}
	}
	if out := g.Join(pull(first.MemberID, "a", "t"), t0, c.fn()); out.Code != None {
		t.Fatalf("a member's rejoin in a full group: %v", out.Code)
	}
}

// A join carrying more than MaxMemberMetadataBytes is refused.
func TestJoinMetadataBound(t *testing.T) {
	g := New(testConfig())
	req := pull("", "a", "t")
	req.ProtocolType = "consumer"
	req.Protocols = []Protocol{{Name: "range", Metadata: make([]byte, MaxMemberMetadataBytes+1)}}
	if out := g.Join(req, t0, counts{"t": 1}.fn()); out.Code != InvalidRequest {
		t.Fatalf("a join with %d bytes of metadata: %v, want INVALID_REQUEST", MaxMemberMetadataBytes+1, out.Code)
	}
	if len(g.MemberIDs()) != 0 {
		t.Fatalf("members after the refusal: %v", g.MemberIDs())
	}
}
