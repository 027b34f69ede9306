package groups

import "time"

// Static membership (Kafka's group.instance.id, KIP-345): a member that
// joins with an instance id keeps its place when its process restarts.
// Its first join after the restart has an empty member id; it gets a new
// one and takes over the old member's assignment, and the old id is
// fenced (FENCED_INSTANCE_ID) so that a process still using it stops. A
// Stable group does not rebalance for such a rejoin unless the protocol
// it would vote for changes. A static member leaves by a LeaveGroup that
// names its instance id, or when its session times out.

// Instance checks a request's group instance id against its member id, as
// Kafka's validateMember does: no instance id is fine; one the group does
// not know is UNKNOWN_MEMBER_ID; one another member holds is
// FENCED_INSTANCE_ID. It returns the instance's member id, which is also
// how a LeaveGroup that names only an instance id finds its member.
func (g *Group) Instance(memberID, instanceID string) (string, Code) {
	if instanceID == "" {
		return memberID, None
	}
	id, ok := g.statics[instanceID]
	switch {
	case !ok:
		return memberID, UnknownMemberID
	case memberID != "" && memberID != id:
		return memberID, FencedInstanceID
	}
	return id, None
}

// replaceStatic is the rejoin of a static member under a new member id:
// the member of req.InstanceID (old) moves to the new id with its
// assignment, answers owed to old are FENCED_INSTANCE_ID, and the join is
// answered at once in a Stable group whose vote stays the same (with the
// leader id as it was, so that a member that was the leader does not
// assign again: its new id is not the one it is told), or else parked.
func (g *Group) replaceStatic(req JoinRequest, old string, assignors []string, now time.Time, parts PartitionCounts) Outcome {
	m := g.members[old]
	id := g.newID(req.idPrefix())
	var out Outcome
	if m.parked {
		out.Replies = append(out.Replies, JoinReply{ReplyTo: m.replyTo, Code: FencedInstanceID, MemberID: old})
		m.parked, m.replyTo = false, nil
	}
	if m.syncParked {
		g.owed = append(g.owed, SyncReply{ReplyTo: m.syncReplyTo, Code: FencedInstanceID, MemberID: old})
		m.syncParked, m.syncReplyTo = false, nil
	}
	delete(g.members, old)
	g.members[id] = m
	g.statics[req.InstanceID] = id
	leader := g.leader
	if g.leader == old {
		g.leader = id
	}
	m.rec.MemberID = id
	g.updateMember(m, req, assignors, now)
	// Persisted at once in every state: a coordinator that took over with
	// the old id would fence the member that replaced it.
	out.MemberID, out.Persist = id, true
	switch g.state {
	case Stable:
		if g.vote() == g.assignor {
			reply := JoinReply{ReplyTo: req.ReplyTo, Generation: g.generation, MemberID: id, LeaderID: leader,
				Assignor: g.assignor, Members: g.MemberIDs(), Assignment: cloneAssignment(m.rec.Assignment)}
			if g.protocolType != "" {
				reply.Protocol = g.assignor
			}
			out.Replies = append(out.Replies, reply)
			return g.settle(out)
		}
		g.startRebalance(now, false)
	case CompletingRebalance:
		// The leader assigns to the old id: start over.
		g.startRebalance(now, false)
	}
	m.joined, m.parked, m.replyTo = true, true, req.ReplyTo
	out.merge(g.maybeComplete(now, parts))
	return g.settle(out)
}

// idPrefix starts the member ids a join is given: a static member's
// instance id, as in Kafka (clients recognise their own ids by it), else
// the client id.
func (r JoinRequest) idPrefix() string {
	if r.InstanceID != "" && r.Push.IsZero() {
		return r.InstanceID
	}
	return r.ClientID
}
