package groups

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// A randomized model: clients join (pull and push, sometimes with no
// assignor in common, some static), rejoin with new subscriptions, leave,
// go silent and come back, restart under their instance ids, heartbeat and react as a consumer does; time advances with
// ticks; partitions grow; the coordinator fails over to what it persisted.
// After every step sim.check asserts: the generation never decreases; when
// Stable, every partition of every subscribed topic is owned exactly once
// by a subscribing member and no join is left parked; no partition has two
// owners in one generation, as the group and as the clients saw it; no
// non-member or stale generation may commit; a static member's ids from
// before a restart are fenced; every parked join is answered once.
func TestGroupModelRandomized(t *testing.T) {
	topics := []string{"t0", "t1", "t2"}
	assignorSets := [][]string{{"range"}, {"sticky", "range"}, {"roundrobin", "range"}, {"sticky", "roundrobin", "range"}, {"sticky"}}
	for seed := uint64(0); seed < 150; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		cfg := testConfig()
		if rng.IntN(2) == 0 {
			cfg.InitialRebalanceDelay = ms(300)
		}
		cfg.RequireMemberID = rng.IntN(3) == 0
		c := counts{}
		for _, topic := range topics {
			c[topic] = int32(rng.IntN(7))
		}
		s := newSim(t, cfg, c)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s.t = t
			live := func() []*client {
				var out []*client
				for _, cl := range s.clients {
					if !cl.gone {
						out = append(out, cl)
					}
				}
				return out
			}
			pick := func() *client {
				l := live()
				if len(l) == 0 {
					return nil
				}
				return l[rng.IntN(len(l))]
			}
			for step := 0; step < 200; step++ {
				switch r := rng.IntN(20); {
				case r < 2 && len(live()) < 8: // a new client
					cl := &client{
						clientID:  fmt.Sprintf("c%d", len(s.clients)),
						topics:    randomSubset(rng, topics),
						assignors: assignorSets[rng.IntN(len(assignorSets))],
						push:      rng.IntN(4) == 0,
					}
					if !cl.push && rng.IntN(3) == 0 {
						cl.instance = "i-" + cl.clientID
					}
					s.clients = append(s.clients, cl)
					s.join(cl)
				case r < 4: // a rejoin, perhaps with a new subscription
					if cl := pick(); cl != nil && cl.id != "" {
						if rng.IntN(2) == 0 {
							cl.topics = randomSubset(rng, topics)
						}
						s.join(cl)
					}
				case r < 5: // a leave
					if cl := pick(); cl != nil && cl.id != "" {
						cl.gone = true
						s.apply(s.g.Leave(cl.id, s.now, s.counts.fn()))
					}
				case r < 6: // a push member's actor dies, or a client hangs or recovers
					if cl := pick(); cl != nil {
						cl.silent = !cl.silent
					}
				case r < 7: // partitions grow
					topic := topics[rng.IntN(len(topics))]
					s.counts[topic] += int32(1 + rng.IntN(3))
					if rng.IntN(2) == 0 {
						s.apply(s.g.PartitionsChanged(s.now, s.counts.fn()))
					} else {
						s.tick(0) // Tick notices by itself
					}
				case r < 8:
					s.failover()
				case r < 9 && rng.IntN(2) == 0: // a static member's process restarts
					if cl := pick(); cl != nil && cl.instance != "" {
						s.restart(cl)
					}
				case r < 9: // a sync
					if cl := pick(); cl != nil && cl.id != "" {
						a, code := s.g.Sync(cl.id, cl.generation, s.now)
						m, member := s.g.Member(cl.id)
						if code == None && (!member || !equalAssignment(a, m.Assignment) || !equalAssignment(a, cl.assignment)) {
							t.Fatalf("sync of %+v: %v, member %v", cl, a, m)
						}
					}
				default: // time passes: heartbeats, then a tick
					for _, cl := range live() {
						if rng.IntN(4) > 0 {
							s.heartbeat(cl)
						}
					}
					s.tick(ms(rng.IntN(400)))
				}
				// A push member marked silent stands for a dead actor: the
				// actor saw it die and removes it.
				for _, cl := range live() {
					if cl.push && cl.silent && cl.id != "" {
						cl.gone = true
						if _, ok := s.g.Member(cl.id); ok {
							s.apply(s.g.Leave(cl.id, s.now, s.counts.fn()))
						}
					}
				}
				checkPushMembersKept(t, s)
			}
			// Left alone, live clients always reach a Stable group.
			for _, cl := range live() {
				cl.silent = false
			}
			for i := 0; i < 100 && s.g.State() == PreparingRebalance; i++ {
				for _, cl := range live() {
					s.heartbeat(cl)
				}
				s.tick(ms(100))
			}
			if s.g.State() == PreparingRebalance {
				t.Fatalf("never settled: %+v", s.g.Describe())
			}
		})
	}
}

// checkPushMembersKept rejoins push members that a failover lost (their
// first generation was never persisted): the broker subscribes them again.
// That sim.apply sees no push member removed but by Leave is the check.
func checkPushMembersKept(t *testing.T, s *sim) {
	t.Helper()
	for _, cl := range s.clients {
		if cl.push && !cl.gone && cl.id != "" && !cl.joining && !slices.Contains(s.g.MemberIDs(), cl.id) {
			if slices.ContainsFunc(s.stored.Members, func(m MemberRecord) bool { return m.MemberID == cl.id }) {
				t.Fatalf("push member %s lost although persisted", cl.id)
			}
			cl.id = ""
			s.join(cl)
		}
	}
}
