package groups

import (
	"slices"
	"time"
)

// Relay groups follow Kafka's classic protocol, where the clients assign:
// members join with a protocol type and named protocols carrying opaque
// metadata; the coordinator picks the protocol every member supports (the
// same vote as for assignors), hands the leader every member's metadata
// for it in its JoinReply, and waits in CompletingRebalance for the
// leader's SyncGroup, whose opaque assignments it stores and relays to
// each member's SyncGroup. A group holds relay members or members the
// coordinator assigns to, never both.

// protocolNames lists the names of protocols, in order, once each.
func protocolNames(ps []Protocol) []string {
	var out []string
	for _, p := range ps {
		if p.Name != "" && !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

// sameKind reports whether a member of protocolType may join: the group
// is empty but for member except, or its members are of the same kind.
func (g *Group) sameKind(protocolType, except string) bool {
	for id := range g.members {
		if id != except {
			return g.protocolType == protocolType
		}
	}
	return true
}

// completeRelay forms a relay group's generation: no assignment is
// computed; the leader gets the members' metadata for the chosen protocol
// and the group waits for its SyncGroup. Nothing is persisted until the
// assignments are in: a coordinator that fails meanwhile comes back at the
// previous generation, whose members rejoin, as in Kafka.
func (g *Group) completeRelay(now time.Time, ids []string, out Outcome) Outcome {
	out.Persist = false
	var meta []MemberMetadata
	for _, id := range ids {
		meta = append(meta, MemberMetadata{MemberID: id, Metadata: g.members[id].metadataFor(g.assignor)})
	}
	for _, id := range ids {
		m := g.members[id]
		m.rec.Assignment, m.rec.RelayAssignment = nil, nil
		m.lastSeen = now
		m.joined = false
		if m.parked {
			reply := JoinReply{ReplyTo: m.replyTo, Generation: g.generation, MemberID: id, LeaderID: g.leader,
				Assignor: g.assignor, Protocol: g.assignor, Members: slices.Clone(ids)}
			if id == g.leader {
				reply.MemberMetadata = slices.Clone(meta)
			}
			out.Replies = append(out.Replies, reply)
		}
		m.parked, m.replyTo = false, nil
	}
	g.state = CompletingRebalance
	return out
}

// metadataFor is the member's metadata for protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.rec.Protocols {
		if p.Name == name {
			return slices.Clone(p.Metadata)
		}
	}
	return nil
}

// SyncRelay handles a relay member's SyncGroup. Errors, answered at once
// in Outcome.SyncReplies: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID (as Sync),
// REBALANCE_IN_PROGRESS while the group is preparing a rebalance. In
// CompletingRebalance the leader's sync stores assignments (member id ->
// opaque bytes; a member missing from it gets none), makes the group
// Stable, sets Persist and answers every parked sync with its member's
// assignment; another member's sync is parked until then. In Stable it is
// answered with the member's assignment. It refreshes the last-seen time.
func (g *Group) SyncRelay(memberID string, generation int32, assignments map[string][]byte, replyTo any, now time.Time) Outcome {
	m, code := g.current(memberID, generation)
	if code == None && g.protocolType == "" {
		code = InconsistentGroupProtocol
	}
	if code != None {
		return Outcome{SyncReplies: []SyncReply{{ReplyTo: replyTo, Code: code, MemberID: memberID}}}
	}
	m.lastSeen = now
	switch g.state {
	case PreparingRebalance:
		return Outcome{SyncReplies: []SyncReply{{ReplyTo: replyTo, Code: RebalanceInProgress, MemberID: memberID}}}
	case Stable:
		return Outcome{SyncReplies: []SyncReply{{ReplyTo: replyTo, MemberID: memberID, Assignment: slices.Clone(m.rec.RelayAssignment)}}}
	}
	if memberID != g.leader {
		if m.syncParked {
			// A repeated sync supersedes the parked one.
			g.owed = append(g.owed, SyncReply{ReplyTo: m.syncReplyTo, Code: RebalanceInProgress, MemberID: memberID})
		}
		m.syncParked, m.syncReplyTo = true, replyTo
		return g.settle(Outcome{})
	}
	out := Outcome{Persist: true}
	for _, id := range g.MemberIDs() {
		o := g.members[id]
		o.rec.RelayAssignment = slices.Clone(assignments[id])
		if o.syncParked {
			out.SyncReplies = append(out.SyncReplies, SyncReply{ReplyTo: o.syncReplyTo, MemberID: id, Assignment: slices.Clone(o.rec.RelayAssignment)})
			o.syncParked, o.syncReplyTo = false, nil
		}
	}
	out.SyncReplies = append(out.SyncReplies, SyncReply{ReplyTo: replyTo, MemberID: memberID, Assignment: slices.Clone(m.rec.RelayAssignment)})
	g.state = Stable
	return g.settle(out)
}

// ProtocolType is the relay members' protocol type ("": the coordinator
// assigns).
func (g *Group) ProtocolType() string { return g.protocolType }

// settle adds the sync answers a call made due to its Outcome.
func (g *Group) settle(out Outcome) Outcome {
	out.SyncReplies = append(g.owed, out.SyncReplies...)
	g.owed = nil
	return out
}
