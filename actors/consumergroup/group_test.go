package consumergroup

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors/groups"
)

func TestFirstMemberGetsEverything(t *testing.T) {
	ts := topics{"a": 3, "b": 1}
	g := New(testConfig())
	a := newClient("A", "a", "b", "missing")
	r := a.join(t, g, t0, ts.catalog())
	if r.Code != None || r.MemberEpoch != 1 || !r.HasAssignment || r.HeartbeatInterval != 5*time.Second {
		t.Fatalf("join: %+v", r)
	}
	if want := assignment("a", []int32{0, 1, 2}, "b", []int32{0}); !reflect.DeepEqual(r.Assignment, want) {
		t.Fatalf("assignment %v, want %v", r.Assignment, want)
	}
	// Nothing changed: a keepalive carries no assignment, a full heartbeat does.
	if r := a.keepalive(t, g, t0.Add(time.Second), ts.catalog()); r.HasAssignment || r.MemberEpoch != 1 {
		t.Fatalf("keepalive: %+v", r)
	}
	full := Heartbeat{MemberID: "A", MemberEpoch: 1, RebalanceTimeout: time.Minute, Topics: a.topics, TopicsSet: true,
		Owned: a.owned.list(), OwnedSet: true}
	if r := g.Heartbeat(full, t0.Add(2*time.Second), ts.catalog()); !r.HasAssignment || r.MemberEpoch != 1 || g.Epoch() != 1 {
		t.Fatalf("full heartbeat: %+v (group epoch %d)", r, g.Epoch())
	}
	if d := g.Describe(); d.State != "Stable" || d.Assignor != Uniform || len(d.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
}

// A second member gets its share only after the first gave it up: the
// first is told to revoke at its epoch, the second waits for the
// partitions (unreleased), and no partition is ever owned twice.
func TestRevocationBeforeReassignment(t *testing.T) {
	ts := topics{"a": 4}
	cat := ts.catalog()
	g := New(testConfig())
	a, b := newClient("A", "a"), newClient("B", "a")
	a.slow = true
	now := t0
	a.join(t, g, now, cat)
	r := b.join(t, g, now, cat)
	if r.MemberEpoch != 2 || len(r.Assignment) != 0 {
		t.Fatalf("B joined while A holds everything: %+v", r)
	}
	disjoint(t, g, a, b)
	r = a.beat(t, g, now, cat)
	if r.MemberEpoch != 1 || len(r.Assignment[0].Partitions) != 2 || len(a.pending) != 2 {
		t.Fatalf("A told to revoke: %+v pending %v", r, a.pending)
	}
	if d := g.Describe(); d.State != "Reconciling" || d.Members[0].State != UnrevokedPartitions || d.Members[1].State != UnreleasedPartitions {
		t.Fatalf("describe while revoking: %+v", d)
	}
	// A still owns them: B gets nothing yet, and A stays at epoch 1.
	if r := b.beat(t, g, now, cat); len(r.Assignment) != 0 && r.HasAssignment {
		t.Fatalf("B got partitions A still owns: %+v", r)
	}
	if r := a.beat(t, g, now, cat); r.MemberEpoch != 1 {
		t.Fatalf("A moved before revoking: %+v", r)
	}
	disjoint(t, g, a, b)
	a.revoke()
	if r := a.beat(t, g, now, cat); r.MemberEpoch != 2 {
		t.Fatalf("A after revoking: %+v", r)
	}
	r = b.beat(t, g, now, cat)
	if r.MemberEpoch != 2 || len(r.Assignment) != 1 || len(r.Assignment[0].Partitions) != 2 {
		t.Fatalf("B after A revoked: %+v", r)
	}
	disjoint(t, g, a, b)
	if d := g.Describe(); d.State != "Stable" {
		t.Fatalf("describe after: %+v", d)
	}
	if len(a.owned)+len(b.owned) != 4 {
		t.Fatalf("owned %v and %v", a.owned, b.owned)
	}
}

func TestEpochFencing(t *testing.T) {
	ts := topics{"a": 2}
	cat := ts.catalog()
	g := New(testConfig())
	a, b := newClient("A", "a"), newClient("B", "a")
	a.join(t, g, t0, cat)
	b.join(t, g, t0, cat)
	a.beat(t, g, t0, cat) // revokes one (fast client)
	a.beat(t, g, t0, cat) // at epoch 2 now
	if a.epoch != 2 {
		t.Fatalf("A at %d", a.epoch)
	}
	// A heartbeat from an epoch the member never had is fenced.
	r := g.Heartbeat(Heartbeat{MemberID: "A", MemberEpoch: 7, RebalanceTimeout: -1}, t0, cat)
	if r.Code != FencedMemberEpoch || !strings.Contains(r.Message, "epoch 2") {
		t.Fatalf("future epoch: %+v", r)
	}
	// A lost answer: the previous epoch, owning no more than assigned, is fine.
	r = g.Heartbeat(Heartbeat{MemberID: "A", MemberEpoch: 1, RebalanceTimeout: -1, Owned: a.owned.list(), OwnedSet: true}, t0, cat)
	if r.Code != None || r.MemberEpoch != 2 {
		t.Fatalf("previous epoch after a lost answer: %+v", r)
	}
	// ... but not when it claims partitions it no longer has, or says nothing.
	r = g.Heartbeat(Heartbeat{MemberID: "A", MemberEpoch: 1, RebalanceTimeout: -1, Owned: assignment("a", []int32{0, 1}), OwnedSet: true}, t0, cat)
	if r.Code != FencedMemberEpoch {
		t.Fatalf("previous epoch owning too much: %+v", r)
	}
	if r := g.Heartbeat(Heartbeat{MemberID: "A", MemberEpoch: 1, RebalanceTimeout: -1}, t0, cat); r.Code != FencedMemberEpoch {
		t.Fatalf("previous epoch keepalive: %+v", r)
	}
	if r := g.Heartbeat(Heartbeat{MemberID: "nobody", MemberEpoch: 3, RebalanceTimeout: -1}, t0, cat); r.Code != UnknownMemberID {
		t.Fatalf("unknown member: %+v", r)
	}
	// A fenced member rejoins with epoch 0 under the same id: it owns
	// nothing then, and gets its target back without a new group epoch.
	epoch := g.Epoch()
	r = a.join(t, g, t0, cat)
	if r.Code != None || r.MemberEpoch != epoch || g.Epoch() != epoch || len(r.Assignment) != 1 {
		t.Fatalf("rejoin: %+v (group epoch %d, was %d)", r, g.Epoch(), epoch)
	}
}

func TestLeaveAndTimeouts(t *testing.T) {
	ts := topics{"a": 4}
	cat := ts.catalog()
	cfg := testConfig()
	g := New(cfg)
	a, b, c := newClient("A", "a"), newClient("B", "a"), newClient("C", "a")
	now := t0
	for _, x := range []*client{a, b, c} {
		x.join(t, g, now, cat)
	}
	settle(t, g, now, cat, a, b, c)
	// B leaves: its partitions go to the others at once.
	r := g.Heartbeat(Heartbeat{MemberID: "B", MemberEpoch: -1}, now, cat)
	if r.Code != None || r.MemberEpoch != -1 || g.Has("B") {
		t.Fatalf("leave: %+v", r)
	}
	if r := g.Heartbeat(Heartbeat{MemberID: "B", MemberEpoch: -1}, now, cat); r.Code != UnknownMemberID {
		t.Fatalf("second leave: %+v", r)
	}
	settle(t, g, now, cat, a, c)
	if len(a.owned)+len(c.owned) != 4 {
		t.Fatalf("after leave: %v %v", a.owned, c.owned)
	}
	// C goes silent: removed after the session timeout, not before.
	now = now.Add(cfg.SessionTimeout)
	a.keepalive(t, g, now, cat)
	if out := g.Tick(now, cat); len(out.Removed) != 0 {
		t.Fatalf("removed at the timeout: %+v", out)
	}
	now = now.Add(time.Millisecond)
	if out := g.Tick(now, cat); !reflect.DeepEqual(out.Removed, []string{"C"}) || !out.EpochBumped {
		t.Fatalf("tick: %+v", out)
	}
	settle(t, g, now, cat, a)
	if len(a.owned) != 4 {
		t.Fatalf("A owns %v", a.owned)
	}
	// A member that does not revoke within its rebalance timeout is removed.
	d := newClient("D", "a")
	a.slow = true
	d.join(t, g, now, cat)
	a.beat(t, g, now, cat)
	if len(a.pending) == 0 {
		t.Fatal("A was not asked to revoke")
	}
	now = now.Add(30 * time.Second)
	a.keepalive(t, g, now, cat)
	d.keepalive(t, g, now, cat)
	if out := g.Tick(now, cat); len(out.Removed) != 0 {
		t.Fatalf("removed before its rebalance timeout: %+v", out)
	}
	now = now.Add(31 * time.Second)
	d.keepalive(t, g, now, cat)
	if out := g.Tick(now, cat); !reflect.DeepEqual(out.Removed, []string{"A"}) {
		t.Fatalf("tick after the rebalance timeout: %+v", out)
	}
	if r := a.keepalive(t, g, now, cat); r.Code != UnknownMemberID {
		t.Fatalf("A after removal: %+v", r)
	}
	settle(t, g, now, cat, d)
	if len(d.owned) != 4 {
		t.Fatalf("D owns %v", d.owned)
	}
}

// settle heartbeats the clients until none is told anything new.
func settle(t *testing.T, g *Group, now time.Time, cat Catalog, cs ...*client) {
	t.Helper()
	for range 10 {
		moved := false
		for _, c := range cs {
			epoch, owned := c.epoch, len(c.owned)
			c.beat(t, g, now, cat)
			moved = moved || c.epoch != epoch || len(c.owned) != owned
			disjoint(t, g, cs...)
		}
		if !moved && g.Describe().State == "Stable" {
			return
		}
	}
	t.Fatalf("did not settle: %+v", g.Describe())
}

func TestNewPartitionsAndRegex(t *testing.T) {
	ts := topics{"orders": 2, "payments": 1}
	cat := ts.catalog()
	g := New(testConfig())
	a := newClient("A")
	a.regex = "orders|pay.*"
	a.join(t, g, t0, cat)
	if want := assignment("orders", []int32{0, 1}, "payments", []int32{0}); !reflect.DeepEqual(a.owned.list(), want) {
		t.Fatalf("regex assignment %v", a.owned.list())
	}
	// Whole names only: "xorders" does not match, and neither does a topic
	// before the next refresh.
	ts["xorders"], ts["payroll"] = 1, 1
	now := t0.Add(500 * time.Millisecond)
	if out := g.Tick(now, cat); out.EpochBumped {
		t.Fatal("regex matched again before its refresh")
	}
	now = t0.Add(time.Second)
	if out := g.Tick(now, cat); !out.EpochBumped {
		t.Fatal("new matching topic not followed")
	}
	settle(t, g, now, cat, a)
	if want := assignment("orders", []int32{0, 1}, "payments", []int32{0}, "payroll", []int32{0}); !reflect.DeepEqual(a.owned.list(), want) {
		t.Fatalf("after refresh %v", a.owned.list())
	}
	// More partitions of a subscribed topic: the next tick follows them.
	ts["orders"] = 3
	if out := g.Tick(now, cat); !out.EpochBumped {
		t.Fatal("new partitions not followed")
	}
	settle(t, g, now, cat, a)
	if got := a.owned.list()[0].Partitions; !reflect.DeepEqual(got, []int32{0, 1, 2}) {
		t.Fatalf("orders partitions %v", got)
	}
	if out := g.Tick(now, cat); out.EpochBumped {
		t.Fatal("tick without changes bumped the epoch")
	}
}

// A regular expression subscribes a member only to the matching topics
// its principal may describe (Kafka's rule), each member for its own
// principal; a topic it may describe later is followed at the next
// refresh, and a restored group matches as before.
func TestRegexMatchesDescribableTopicsOnly(t *testing.T) {
	ts := topics{"orders": 2, "payments": 2, "secret": 2}
	may := map[string]bool{"User:a/orders": true, "User:a/payments": true, "User:b/orders": true}
	cat := ts.catalog()
	cat.Describable = func(principal, topic string) bool { return may[principal+"/"+topic] }
	g := New(testConfig())
	a, b := newClient("A"), newClient("B")
	a.regex, a.principal = ".*", "User:a"
	b.regex, b.principal = ".*", "User:b"
	a.join(t, g, t0, cat)
	b.join(t, g, t0, cat)
	settle(t, g, t0, cat, a, b)
	subscribed := func(id string) []string { return g.subscribed(g.members[id]) }
	if got := subscribed("A"); !reflect.DeepEqual(got, []string{"orders", "payments"}) {
		t.Errorf("A (User:a) subscribed to %v", got)
	}
	if got := subscribed("B"); !reflect.DeepEqual(got, []string{"orders"}) {
		t.Errorf("B (User:b) subscribed to %v", got)
	}
	for x := range b.owned {
		if x.topic != "orders" {
			t.Errorf("B holds %s-%d, which User:b may not describe", x.topic, x.p)
		}
	}
	for x := range a.owned {
		if x.topic == "secret" {
			t.Errorf("A holds %s-%d", x.topic, x.p)
		}
	}
	restored := Restore(testConfig(), g.Snapshot(), t0, cat)
	if got := restored.subscribed(restored.members["B"]); !reflect.DeepEqual(got, []string{"orders"}) {
		t.Errorf("B restored subscribed to %v", got)
	}
	may["User:b/payments"] = true
	now := t0.Add(time.Second)
	if out := g.Tick(now, cat); !out.EpochBumped {
		t.Fatal("a topic User:b may now describe was not followed")
	}
	if got := subscribed("B"); !reflect.DeepEqual(got, []string{"orders", "payments"}) {
		t.Errorf("B after the grant subscribed to %v", got)
	}
}

func TestStaticMemberReturns(t *testing.T) {
	ts := topics{"a": 2}
	cat := ts.catalog()
	g := New(testConfig())
	join := func(id string) Reply {
		return g.Heartbeat(Heartbeat{MemberID: id, InstanceID: "i1", RebalanceTimeout: time.Minute, Topics: []string{"a"}, TopicsSet: true, OwnedSet: true}, t0, cat)
	}
	r := join("m1")
	if r.Code != None || len(r.Assignment) != 1 {
		t.Fatalf("join: %+v", r)
	}
	if r := join("m2"); r.Code != UnreleasedInstanceID {
		t.Fatalf("second process with the same instance: %+v", r)
	}
	if r := g.Heartbeat(Heartbeat{MemberID: "m1", MemberEpoch: 1, InstanceID: "other", RebalanceTimeout: -1}, t0, cat); r.Code != FencedInstanceID {
		t.Fatalf("wrong instance: %+v", r)
	}
	// A static leave by member id alone, as franz-go sends it.
	if r := g.Heartbeat(Heartbeat{MemberID: "m1", MemberEpoch: -2}, t0, cat); r.Code != None || r.MemberEpoch != -2 || !g.Has("m1") {
		t.Fatalf("static leave: %+v", r)
	}
	epoch := g.Epoch()
	r = join("m2")
	if r.Code != None || r.MemberEpoch != epoch || g.Epoch() != epoch || len(r.Assignment) != 1 || g.Has("m1") {
		t.Fatalf("return under a new id: %+v (epoch %d, was %d)", r, g.Epoch(), epoch)
	}
	// Gone for longer than the session: the place is given up.
	if r := g.Heartbeat(Heartbeat{MemberID: "m2", MemberEpoch: -2, InstanceID: "i1"}, t0, cat); r.Code != None {
		t.Fatalf("static leave naming the instance: %+v", r)
	}
	if out := g.Tick(t0.Add(46*time.Second), cat); len(out.Removed) != 1 || g.Has("m2") {
		t.Fatalf("tick: %+v", out)
	}
}

func TestRefusals(t *testing.T) {
	cat := topics{"a": 1}.catalog()
	g := New(testConfig())
	for _, c := range []struct {
		name string
		h    Heartbeat
		code Code
	}{
		{"no member id", Heartbeat{RebalanceTimeout: 1, TopicsSet: true}, InvalidRequest},
		{"epoch -3", Heartbeat{MemberID: "m", MemberEpoch: -3}, InvalidRequest},
		{"join without rebalance timeout", Heartbeat{MemberID: "m", RebalanceTimeout: -1, TopicsSet: true}, InvalidRequest},
		{"join without subscription", Heartbeat{MemberID: "m", RebalanceTimeout: 1}, InvalidRequest},
		{"join owning partitions", Heartbeat{MemberID: "m", RebalanceTimeout: 1, TopicsSet: true, Owned: assignment("a", []int32{0}), OwnedSet: true}, InvalidRequest},
		{"unknown assignor", Heartbeat{MemberID: "m", RebalanceTimeout: 1, TopicsSet: true, Assignor: "sticky"}, UnsupportedAssignor},
		{"bad regex", Heartbeat{MemberID: "m", RebalanceTimeout: 1, Regex: "a(", RegexSet: true}, InvalidRegularExpression},
		{"huge regex", Heartbeat{MemberID: "m", RebalanceTimeout: 1, Regex: strings.Repeat("a", MaxRegexBytes+1), RegexSet: true}, InvalidRegularExpression},
		{"huge subscription", Heartbeat{MemberID: "m", RebalanceTimeout: 1, Topics: []string{strings.Repeat("t", 1<<20+1)}, TopicsSet: true}, InvalidRequest},
	} {
		if r := g.Heartbeat(c.h, t0, cat); r.Code != c.code || r.Message == "" {
			t.Errorf("%s: %+v, want %s", c.name, r, c.code)
		}
	}
	if len(g.MemberIDs()) != 0 || g.Epoch() != 0 {
		t.Fatalf("refusals changed the group: %v epoch %d", g.MemberIDs(), g.Epoch())
	}
	// Coordinator-named members (v0) and the size bound.
	cfg := testConfig()
	cfg.MaxSize = 1
	n := 0
	cfg.NewMemberID = func() string { n++; return "gen-" + string(rune('0'+n)) }
	g = New(cfg)
	join := Heartbeat{RebalanceTimeout: 1, Topics: []string{"a"}, TopicsSet: true}
	if r := g.Heartbeat(join, t0, cat); r.Code != None || r.MemberID != "gen-1" {
		t.Fatalf("v0 join: %+v", r)
	}
	if r := g.Heartbeat(join, t0, cat); r.Code != GroupMaxSizeReached {
		t.Fatalf("join over max size: %+v", r)
	}
}

func TestCommitCheck(t *testing.T) {
	ts := topics{"a": 2}
	cat := ts.catalog()
	g := New(testConfig())
	if code, _ := g.CommitCheck("", -1, nil); code != None {
		t.Fatalf("admin commit to an empty group: %s", code)
	}
	a, b := newClient("A", "a"), newClient("B", "a")
	a.join(t, g, t0, cat)
	if code, _ := g.CommitCheck("", -1, nil); code != NonEmptyGroup {
		t.Fatalf("admin commit to a group with members: %s", code)
	}
	b.join(t, g, t0, cat)
	settle(t, g, t0, cat, a, b)
	kept := a.owned.list() // A kept one partition since epoch 1 and is at 2 now
	var lost []int32
	for p := range int32(2) {
		if p != kept[0].Partitions[0] {
			lost = append(lost, p)
		}
	}
	for _, c := range []struct {
		member string
		epoch  int32
		parts  any
		code   Code
	}{
		{"A", 2, assignment("a", []int32{0, 1}), None}, // its epoch: as Kafka, anything
		{"A", 1, kept, None},                           // an earlier epoch, a partition held since
		{"A", 1, assignment("a", lost), StaleMemberEpoch},
		{"A", 3, kept, StaleMemberEpoch},
		{"Z", 1, kept, UnknownMemberID},
	} {
		code, _ := g.CommitCheck(c.member, c.epoch, c.parts.([]groups.TopicPartitions))
		if code != c.code {
			t.Errorf("commit %s@%d %v: %s, want %s", c.member, c.epoch, c.parts, code, c.code)
		}
	}
}

func TestRangeAssignorAndVote(t *testing.T) {
	ts := topics{"a": 2, "b": 2}
	cat := ts.catalog()
	g := New(testConfig())
	for _, id := range []string{"A", "B"} {
		g.Heartbeat(Heartbeat{MemberID: id, RebalanceTimeout: 1, Topics: []string{"a", "b"}, TopicsSet: true, Assignor: Range, OwnedSet: true}, t0, cat)
	}
	d := g.Describe()
	if d.Assignor != Range {
		t.Fatalf("assignor %q", d.Assignor)
	}
	// Range co-partitions: A gets partition 0 of both topics.
	if want := assignment("a", []int32{0}, "b", []int32{0}); !reflect.DeepEqual(d.Members[0].Target, want) {
		t.Fatalf("A's target %v", d.Members[0].Target)
	}
}

// RegexBytes counts an expression by what it compiles to and what it
// matches for its principal, not by its text.
func TestRegexBytes(t *testing.T) {
	ts := topics{}
	for i := range 1000 {
		ts[fmt.Sprintf("t%d", i)] = 1
	}
	cat := ts.catalog()
	cat.Describable = func(principal, topic string) bool { return principal == "User:all" || topic == "t1" }
	short, long := RegexBytes("t1", "User:all", cat), RegexBytes("[a-z]{1000}", "User:all", cat)
	if short <= 0 || long < 200<<10 {
		t.Errorf("t1: %d bytes, [a-z]{1000}: %d bytes", short, long)
	}
	all, one := RegexBytes("t.*", "User:all", cat), RegexBytes("t.*", "User:one", cat)
	if all-one != 16*999 {
		t.Errorf("t.* matching 1,000 topics: %d bytes, matching one: %d", all, one)
	}
	if b := RegexBytes("(", "User:all", cat); b != 0 {
		t.Errorf("an expression that does not compile: %d bytes", b)
	}
}

// While the catalog's version stays, ticks read nothing of it: a group of
// members subscribed by expression to a cluster of many topics costs no
// matching or counting between changes. A new version (a topic created)
// is followed as before.
func TestTicksReadTheCatalogOnlyWhenItChanged(t *testing.T) {
	ts := topics{"orders": 2, "payments": 1}
	var version uint64 = 1
	reads := 0
	cat := Catalog{
		Partitions: func(t string) int32 { reads++; return ts[t] },
		Topics:     func() []string { reads++; return slices.Sorted(maps.Keys(ts)) },
		Version:    func() uint64 { return version },
	}
	g := New(testConfig())
	a, b := newClient("A"), newClient("B", "orders")
	a.regex = "pay.*|orders"
	a.join(t, g, t0, cat)
	b.join(t, g, t0, cat)
	settle(t, g, t0, cat, a, b)
	now := t0.Add(time.Second)
	g.Tick(now, cat) // first look at this version
	reads = 0
	for i := range 20 { // within the session timeout
		now = now.Add(time.Second)
		if out := g.Tick(now, cat); out.EpochBumped {
			t.Fatalf("tick %d bumped the epoch with nothing changed", i)
		}
	}
	if reads != 0 {
		t.Errorf("20 ticks of an unchanged catalog read it %d times", reads)
	}
	ts["payroll"], version = 1, 2
	now = now.Add(time.Second)
	if out := g.Tick(now, cat); !out.EpochBumped {
		t.Fatal("a matching topic created was not followed")
	}
	ts["orders"], version = 3, 3
	if out := g.Tick(now, cat); !out.EpochBumped {
		t.Fatal("new partitions were not followed")
	}
}
