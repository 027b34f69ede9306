package groups

import (
	"slices"
	"time"
)

// startRebalance moves the group to PreparingRebalance at now. Members must
// join again, except push members, which the broker rejoins by itself.
// initial marks an Empty group's first rebalance, which waits out
// Config.InitialRebalanceDelay.
func (g *Group) startRebalance(now time.Time, initial bool) {
	g.state = PreparingRebalance
	g.rebalanceStart = now
	g.initialDelay = initial && g.cfg.InitialRebalanceDelay > 0
	g.delayUntil = now.Add(g.cfg.InitialRebalanceDelay)
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		m.joined = m.push()
		if m.syncParked {
			// The generation it waited for will not be completed: rejoin.
			g.owed = append(g.owed, SyncReply{ReplyTo: m.syncReplyTo, Code: RebalanceInProgress, MemberID: id})
			m.syncParked, m.syncReplyTo = false, nil
		}
	}
}

// maybeComplete forms the next generation if the rebalance may end now:
// when no member is left, when the initial delay is over, when every member
// has joined, or at the deadline (the largest rebalance timeout among the
// members, counted from the start of the rebalance).
func (g *Group) maybeComplete(now time.Time, parts PartitionCounts) Outcome {
	switch { // a case that does not return completes
	case g.state != PreparingRebalance:
		return Outcome{}
	case len(g.members) == 0:
	case g.initialDelay:
		// Like Kafka's InitialDelayedJoin, this waits even when everyone
		// known has joined: the point is to catch members not yet known.
		limit := g.rebalanceStart.Add(max(g.maxRebalanceTimeout(), g.cfg.InitialRebalanceDelay))
		if now.Before(g.delayUntil) && now.Before(limit) {
			return Outcome{}
		}
	case g.allJoined():
	case now.Before(g.rebalanceStart.Add(g.maxRebalanceTimeout())):
		return Outcome{}
	}
	return g.complete(now, parts)
}

// complete ends the rebalance: members that have not joined are removed,
// the generation goes up, and the group is Stable with a new assignment
// (or Empty). Every member's session starts afresh at now, as Kafka does,
// so that a long rebalance does not evict members that took part in it.
func (g *Group) complete(now time.Time, parts PartitionCounts) Outcome {
	out := Outcome{Persist: true, Rebalanced: true}
	for _, id := range g.MemberIDs() {
		if !g.members[id].joined {
			g.remove(id)
			out.Removed = append(out.Removed, id)
		}
	}
	g.generation++
	g.initialDelay = false
	ids := g.MemberIDs()
	if len(ids) == 0 {
		g.state, g.assignor, g.leader, g.counts = Empty, "", "", nil
		return out
	}
	if _, ok := g.members[g.leader]; !ok {
		g.leader = ids[0]
	}
	g.assignor = g.vote()
	if g.protocolType != "" {
		return g.completeRelay(now, ids, out)
	}
	g.counts = g.currentCounts(parts)
	assign, _ := Lookup(g.assignor)
	subs := make([]Subscription, 0, len(ids))
	for _, id := range ids {
		m := g.members[id]
		subs = append(subs, Subscription{MemberID: id, Topics: m.rec.Topics, Previous: m.rec.Assignment})
	}
	result := assign(subs, positive(g.counts))
	for _, id := range ids {
		m := g.members[id]
		next := result[id]
		if !equalAssignment(next, m.rec.Assignment) {
			out.Changed = append(out.Changed, id)
		}
		m.rec.Assignment = next
		m.since = ownedSince(m.since, next, g.generation)
		m.lastSeen = now
		m.joined = false
		if m.parked {
			out.Replies = append(out.Replies, JoinReply{
				ReplyTo:    m.replyTo,
				Generation: g.generation,
				MemberID:   id,
				LeaderID:   g.leader,
				Assignor:   g.assignor,
				Members:    slices.Clone(ids),
				Assignment: cloneAssignment(next),
			})
		}
		m.parked, m.replyTo = false, nil
	}
	g.state = Stable
	return out
}

// vote picks the assignor as Kafka does: each member votes for the first
// of its assignors that every member supports, and the most votes win.
// Kafka breaks ties arbitrarily; here the leader's preference decides.
func (g *Group) vote() string {
	leader := g.members[g.leader]
	var candidates []string // in the leader's order of preference
	for _, a := range leader.rec.Assignors {
		if g.supports([]string{a}, "") {
			candidates = append(candidates, a)
		}
	}
	if len(candidates) == 0 {
		// Only a corrupt snapshot gets here: every join checks for a
		// common assignor.
		if _, ok := Lookup(g.assignor); ok {
			return g.assignor
		}
		return "range"
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, a := range m.rec.Assignors {
			if slices.Contains(candidates, a) {
				votes[a]++
				break
			}
		}
	}
	best := candidates[0]
	for _, a := range candidates[1:] {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

func (g *Group) allJoined() bool {
	for _, m := range g.members {
		if !m.joined {
			return false
		}
	}
	return true
}

// maxRebalanceTimeout is how long a rebalance waits for members to rejoin:
// the largest rebalance timeout among the current members.
func (g *Group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rec.RebalanceTimeout)
	}
	return d
}

// currentCounts reads the partition count of every subscribed topic.
func (g *Group) currentCounts(parts PartitionCounts) map[string]int32 {
	counts := map[string]int32{}
	for _, m := range g.members {
		for _, t := range m.rec.Topics {
			if _, ok := counts[t]; !ok {
				counts[t] = 0
				if parts != nil {
					counts[t] = parts(t)
				}
			}
		}
	}
	return counts
}

func (g *Group) countsChanged(parts PartitionCounts) bool {
	now := g.currentCounts(parts)
	if len(now) != len(g.counts) {
		return true
	}
	for t, n := range now {
		if was, ok := g.counts[t]; !ok || was != n {
			return true
		}
	}
	return false
}

func positive(counts map[string]int32) map[string]int32 {
	out := map[string]int32{}
	for t, n := range counts {
		if n > 0 {
			out[t] = n
		}
	}
	return out
}
