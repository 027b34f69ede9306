package groups

import (
	"slices"
	"testing"
)

// The seed document's rule: one partition of a group goes to exactly one
// member. Members come, go silent, leave, and the coordinator fails over.
func TestScenarioOnePartitionOneMember(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = ms(300)
	s := newSim(t, cfg, counts{"orders": 6})
	newClient := func(name string) *client {
		c := &client{clientID: name, topics: []string{"orders"}, assignors: []string{"sticky", "range"}}
		s.clients = append(s.clients, c)
		return c
	}
	heartbeatAll := func() {
		for _, c := range s.clients {
			s.heartbeat(c)
		}
	}
	settle := func() { // heartbeats and ticks until the group is Stable
		for i := 0; i < 50 && (i == 0 || s.g.State() != Stable); i++ {
			heartbeatAll()
			s.tick(ms(100))
		}
		if s.g.State() != Stable {
			t.Fatalf("not Stable: %+v", s.g.Describe())
		}
	}

	// Three members starting together land in one generation.
	a, b, c := newClient("a"), newClient("b"), newClient("c")
	s.join(a)
	s.tick(ms(100))
	s.join(b)
	s.join(c)
	s.tick(ms(200)) // the delay was extended by b and c
	if s.g.State() != PreparingRebalance {
		t.Fatalf("completed during the initial delay")
	}
	s.tick(ms(200))
	if s.g.Generation() != 1 || s.g.State() != Stable {
		t.Fatalf("three members: %+v", s.g.Describe())
	}
	for _, m := range []*client{a, b, c} {
		if got, code := s.g.Sync(m.id, 1, s.now); code != None || countOf(got) != 2 || countOf(m.assignment) != 2 {
			t.Fatalf("%s: sync %v %v, reply %v", m.id, got, code, m.assignment)
		}
	}

	// A fourth joins: a new generation, every partition owned once.
	d := newClient("d")
	s.join(d)
	if s.g.State() != PreparingRebalance {
		t.Fatal("a join did not start a rebalance")
	}
	settle()
	if s.g.Generation() != 2 {
		t.Fatalf("generation %d after the fourth joined", s.g.Generation())
	}
	checkCovers(t, s.g, s.counts)
	var sizes []int
	for _, m := range []*client{a, b, c, d} {
		sizes = append(sizes, countOf(m.assignment))
	}
	if slices.Sort(sizes); !slices.Equal(sizes, []int{1, 1, 2, 2}) {
		t.Fatalf("6 partitions over 4 members: %v", sizes)
	}
	zombieGen := s.g.Generation()

	// b goes silent: evicted once its session timeout passed, and the
	// others rebalance without it.
	b.silent = true
	evicted := false
	for i := 0; i < 30 && !evicted; i++ {
		heartbeatAll()
		out := s.tick(ms(100))
		evicted = len(out.Removed) == 1 && out.Removed[0] == b.id
	}
	if !evicted {
		t.Fatal("silent member not evicted")
	}
	// Until the next generation is formed b is simply not a member...
	if code := s.g.Heartbeat(b.id, zombieGen, s.now); code != UnknownMemberID {
		t.Fatalf("evicted member's heartbeat: %v", code)
	}
	settle()
	if s.g.Generation() != 3 {
		t.Fatalf("generation %d after the eviction", s.g.Generation())
	}
	// ...and after it, a zombie with an old generation.
	if code := s.g.CommitCheck(b.id, zombieGen); code != IllegalGeneration {
		t.Fatalf("zombie commit: %v", code)
	}
	if code := s.g.Heartbeat(b.id, zombieGen, s.now); code != IllegalGeneration {
		t.Fatalf("zombie heartbeat: %v", code)
	}

	// Leave takes effect at once.
	out := s.apply(s.g.Leave(c.id, s.now, s.counts.fn()))
	if _, ok := s.g.Member(c.id); ok || !out.Persist || s.g.State() != PreparingRebalance {
		t.Fatalf("leave: %+v", out)
	}
	if code := s.g.CommitCheck(c.id, s.g.Generation()); code != UnknownMemberID {
		t.Fatalf("commit after leave: %v", code)
	}
	c.gone = true
	settle()
	if s.g.Generation() != 4 || len(s.g.MemberIDs()) != 2 {
		t.Fatalf("after leave: %+v", s.g.Describe())
	}

	// Failover: the new coordinator keeps the generation and assignments,
	// and the members' heartbeats are accepted.
	before := s.g.Snapshot()
	s.failover()
	if s.g.Generation() != 4 || s.g.State() != Stable {
		t.Fatalf("restored %+v", s.g.Describe())
	}
	for _, m := range before.Members {
		got, _ := s.g.Member(m.MemberID)
		if !equalAssignment(got.Assignment, m.Assignment) {
			t.Fatalf("%s restored with %v, had %v", m.MemberID, got.Assignment, m.Assignment)
		}
		if code := s.g.Heartbeat(m.MemberID, 4, s.now.Add(ms(900))); code != None {
			t.Fatalf("heartbeat of restored %s: %v", m.MemberID, code)
		}
	}
	s.now = s.now.Add(ms(900))
	if out := s.tick(ms(900)); len(out.Removed) != 0 {
		t.Fatalf("restored members evicted: %+v", out)
	}
}
