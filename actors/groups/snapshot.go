package groups

import (
	"slices"
	"time"
)

// Snapshot returns the metadata to persist (GroupMetadataValue): the
// generation, assignor, leader and every member with its subscription,
// timeouts, push target and current assignment.
func (g *Group) Snapshot() Snapshot {
	s := Snapshot{Generation: g.generation, Assignor: g.assignor, Leader: g.leader}
	for _, id := range g.MemberIDs() {
		s.Members = append(s.Members, g.members[id].rec.clone())
	}
	return s
}

// Describe returns the group as `sluice group describe` shows it.
func (g *Group) Describe() Description {
	s := g.Snapshot()
	return Description{State: g.state, Generation: s.Generation, Assignor: s.Assignor, Leader: s.Leader, Members: s.Members}
}

// Restore rebuilds a group from its last Snapshot on a new coordinator
// (after a failover or a restart). The generation and assignments are kept;
// every member's last-seen time is now, so that each gets a full session
// timeout to find the new coordinator. The group is Empty without members
// and Stable otherwise — unless the restored assignment no longer covers
// the subscribed partitions of parts exactly once (the snapshot was written
// mid-rebalance, after a member left, or partitions changed meanwhile):
// then a rebalance starts at now, which the members learn from their next
// heartbeat. Push members are restored too, with their PushTarget (and its
// credit); the actor must watch their actors again and Leave those that are
// gone. AckCheck then accepts acks of the snapshot's generation onwards.
// A relay group (its members joined with a protocol type) is restored
// Stable with the assignments its leader gave, which only the clients can
// judge, or, if it has none, rebalancing.
func Restore(cfg Config, s Snapshot, now time.Time, parts PartitionCounts) *Group {
	g := New(cfg)
	g.generation = s.Generation
	g.assignor = s.Assignor
	g.leader = s.Leader
	for _, r := range s.Members {
		if _, dup := g.members[r.MemberID]; r.MemberID == "" || dup {
			continue
		}
		r = r.clone()
		r.Topics = slices.Compact(slices.Sorted(slices.Values(r.Topics)))
		if r.ProtocolType != "" {
			r.Assignors = protocolNames(r.Protocols)
			g.protocolType = r.ProtocolType
		} else {
			r.Assignors = g.implemented(r.Assignors)
		}
		r.Assignment = toAssignment(fromAssignment(r.Assignment))
		// Ownership before the snapshot's generation is not persisted.
		g.members[r.MemberID] = &member{rec: r, lastSeen: now, since: ownedSince(nil, r.Assignment, s.Generation)}
		if r.InstanceID != "" {
			g.statics[r.InstanceID] = r.MemberID
		}
	}
	if len(g.members) == 0 {
		g.assignor, g.leader = "", ""
		return g
	}
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.MemberIDs()[0]
	}
	g.state = Stable
	if g.protocolType != "" {
		// The assignments are the clients' own: only they can judge them.
		// A snapshot without any was written after a generation was formed
		// and before its leader's sync (a member left meanwhile, say): the
		// members must join again.
		if !slices.ContainsFunc(s.Members, func(r MemberRecord) bool { return len(r.RelayAssignment) > 0 }) {
			g.startRebalance(now, false)
		}
		return g
	}
	g.counts = g.currentCounts(parts)
	if !g.covers() {
		g.startRebalance(now, false)
	}
	return g
}

// covers reports whether the members' assignments give every partition of
// g.counts to exactly one member subscribing to its topic, and nothing else.
func (g *Group) covers() bool {
	seen := map[tp]bool{}
	for _, m := range g.members {
		for _, x := range fromAssignment(m.rec.Assignment) {
			if !slices.Contains(m.rec.Topics, x.topic) || x.p < 0 || x.p >= g.counts[x.topic] || seen[x] {
				return false
			}
			seen[x] = true
		}
	}
	want := 0
	for _, n := range g.counts {
		want += int(max(n, 0))
	}
	return len(seen) == want
}
