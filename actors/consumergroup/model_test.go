package consumergroup

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Members join, leave, go silent, lose answers, revoke slowly, and topics
// grow, in a random order; at every step no partition is owned by two
// members of the group (as the members themselves see it) nor held by two
// in the coordinator, and once the chaos stops every partition is owned
// by exactly one member and the owners are balanced.
func TestRandomSchedulesNeverShareAPartition(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runSchedule(t, seed) })
	}
}

func runSchedule(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	ts := topics{"a": int32(1 + rng.IntN(6)), "b": int32(1 + rng.IntN(4))}
	cat := ts.catalog()
	cfg := testConfig()
	g := New(cfg)
	var cs []*client
	now := t0
	for i := range 2 + rng.IntN(4) {
		c := newClient(fmt.Sprintf("m%d", i), "a", "b")
		c.slow = rng.IntN(2) == 0
		cs = append(cs, c)
	}
	joined := map[string]bool{}
	for range 300 {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		c := cs[rng.IntN(len(cs))]
		switch op := rng.IntN(10); {
		case !joined[c.id] || !g.Has(c.id) && op < 5:
			c.join(t, g, now, cat)
			joined[c.id] = true
		case op == 0:
			g.Heartbeat(Heartbeat{MemberID: c.id, MemberEpoch: -1}, now, cat)
			c.owned, c.pending = set{}, nil
			joined[c.id] = false
		case op == 1:
			c.revoke()
		case op == 2: // the answer is lost: the member keeps its state
			h := Heartbeat{MemberID: c.id, MemberEpoch: c.epoch, RebalanceTimeout: -1, Owned: c.owned.list(), OwnedSet: true}
			g.Heartbeat(h, now, cat)
			c.lost = true
		case op == 3:
			c.keepalive(t, g, now, cat)
		case op == 4 && rng.IntN(10) == 0:
			ts["a"]++
		case op == 5:
			g.Tick(now, cat)
		default:
			c.beat(t, g, now, cat)
		}
		g.Tick(now, cat)
		disjoint(t, g, cs...)
		heldOnce(t, g)
	}
	// Calm: every member joins, revokes at once and heartbeats.
	var live []*client
	for _, c := range cs {
		c.slow = false
		c.revoke()
		if !g.Has(c.id) {
			c.join(t, g, now, cat)
		}
		live = append(live, c)
	}
	settle(t, g, now, cat, live...)
	owned, fewest, most := 0, 1<<30, 0
	for _, c := range live {
		owned += len(c.owned)
		fewest, most = min(fewest, len(c.owned)), max(most, len(c.owned))
	}
	if want := int(ts["a"] + ts["b"]); owned != want || most-fewest > 1 {
		t.Fatalf("after calm: %d of %d partitions owned, %d..%d per member: %+v", owned, want, fewest, most, g.Describe())
	}
}
