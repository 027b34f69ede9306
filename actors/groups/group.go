package groups

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Group is the membership of one consumer group. It is not safe for
// concurrent use: one actor owns it and calls it on every request and on a
// periodic tick, passing the time.
type Group struct {
	cfg        Config
	state      State
	generation int32
	assignor   string
	leader     string
	members    map[string]*member
	// pending holds ids handed out with MEMBER_ID_REQUIRED, until when they
	// may be used to join.
	pending map[string]time.Time
	seq     uint64

	// The rebalance in progress, if any.
	rebalanceStart time.Time
	initialDelay   bool      // an Empty group's first rebalance
	delayUntil     time.Time // when the initial delay ends (before the cap)

	// counts are the partition counts of the subscribed topics that the
	// current assignment was computed from; Tick rebalances when they move.
	counts map[string]int32

	// protocolType is the relay members' protocol type ("": the
	// coordinator assigns). A group holds members of one kind only.
	protocolType string
	// owed are answers to parked relay syncs that a call made due (a
	// rebalance that started); the next Outcome carries them.
	owed []SyncReply
	// statics maps static members' instance ids to their member ids.
	statics map[string]string
}

type member struct {
	rec      MemberRecord // rec.Assignment is the current generation's
	lastSeen time.Time
	// joined: the member has joined in the current rebalance. Push members
	// join every rebalance by themselves: the broker is their client.
	joined  bool
	parked  bool // a JoinReply is owed to replyTo
	replyTo any
	// since is, for each partition of rec.Assignment, the generation since
	// which the member has owned it without a break (see AckCheck).
	since map[tp]int32
	// syncParked: a relay member's SyncGroup waits for the leader's; its
	// answer is owed to syncReplyTo.
	syncParked  bool
	syncReplyTo any
}

func (m *member) push() bool { return !m.rec.Push.IsZero() }

// New returns an Empty group at generation 0. cfg should pass Validate.
func New(cfg Config) *Group {
	return &Group{cfg: cfg, members: map[string]*member{}, pending: map[string]time.Time{}, statics: map[string]string{}}
}

// State is the group's state.
func (g *Group) State() State { return g.state }

// Generation is the current generation; it never decreases.
func (g *Group) Generation() int32 { return g.generation }

// Member returns a copy of one member's record.
func (g *Group) Member(id string) (MemberRecord, bool) {
	m, ok := g.members[id]
	if !ok {
		return MemberRecord{}, false
	}
	return m.rec.clone(), true
}

// Idle reports whether the group holds nothing: no members, no ids handed
// out to join with, no answers owed, and no generation ever formed. Such a
// group is the same as one never seen, and its actor may go.
func (g *Group) Idle() bool {
	return len(g.members) == 0 && len(g.pending) == 0 && len(g.owed) == 0 && g.generation == 0
}

// Busy reports whether the group has anything with a deadline: members,
// ids handed out to join with, a rebalance, answers owed. Tick does
// nothing for a group that is not busy.
func (g *Group) Busy() bool {
	return len(g.members) > 0 || len(g.pending) > 0 || len(g.owed) > 0 || g.state != Empty
}

// Has reports whether id is a member.
func (g *Group) Has(id string) bool {
	_, ok := g.members[id]
	return ok
}

// Len is how many members the group has.
func (g *Group) Len() int { return len(g.members) }

// MemberIDs lists the members, sorted.
func (g *Group) MemberIDs() []string { return slices.Sorted(maps.Keys(g.members)) }

// Join handles a JoinGroup (or a Subscribe, with req.Push set).
//
// Checks, in Kafka's order: the size of what the join carries
// (INVALID_REQUEST above MaxMemberMetadataBytes), the session timeout (INVALID_SESSION_TIMEOUT),
// an assignor in common with every other member
// (INCONSISTENT_GROUP_PROTOCOL), a static member's instance id (see
// static.go: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, or the rejoin that
// takes over its member), then the member id: empty makes a new member
// (or, with Config.RequireMemberID, MEMBER_ID_REQUIRED; GROUP_MAX_SIZE_REACHED
// when the group has Config.MaxSize members), an unknown one is
// UNKNOWN_MEMBER_ID. An accepted join replaces the member's
// subscription, refreshes its last-seen time and is parked: Outcome.Code is
// None and the JoinReply comes once the rebalance completes — when every
// member has joined, or on Tick at the rebalance deadline. Any accepted
// join of a group that is not already rebalancing starts a rebalance, also
// from Stable with an unchanged subscription (see the package doc).
func (g *Group) Join(req JoinRequest, now time.Time, parts PartitionCounts) Outcome {
	if req.Bytes() > MaxMemberMetadataBytes {
		return Outcome{Code: InvalidRequest, MemberID: req.MemberID}
	}
	push := !req.Push.IsZero()
	if !push && (req.SessionTimeout < g.cfg.MinSessionTimeout || req.SessionTimeout > g.cfg.MaxSessionTimeout) {
		return Outcome{Code: InvalidSessionTimeout, MemberID: req.MemberID}
	}
	relay := req.ProtocolType != ""
	assignors := g.implemented(req.Assignors)
	if relay {
		assignors = protocolNames(req.Protocols)
	}
	id := req.MemberID
	if len(assignors) == 0 || !g.supports(assignors, id) || (relay && push) || !g.sameKind(req.ProtocolType, id) {
		return Outcome{Code: InconsistentGroupProtocol, MemberID: id}
	}
	static := req.InstanceID != "" && !push
	if static {
		old, held := g.statics[req.InstanceID]
		switch {
		case id == "" && held:
			return g.replaceStatic(req, old, assignors, now, parts)
		case id != "" && !held:
			return Outcome{Code: UnknownMemberID, MemberID: id}
		case id != "" && old != id:
			return Outcome{Code: FencedInstanceID, MemberID: id}
		}
	}
	var out Outcome
	m, known := g.members[id]
	_, pending := g.pending[id]
	if id == "" && g.cfg.MaxSize > 0 && len(g.members)+len(g.pending) >= g.cfg.MaxSize {
		return Outcome{Code: GroupMaxSizeReached, MemberID: id}
	}
	switch {
	case id == "" && (g.cfg.RequireMemberID || req.RequireMemberID) && !push && !static:
		// A static member skips this: its instance id already names it.
		id = g.newID(req.idPrefix())
		g.pending[id] = now.Add(req.SessionTimeout)
		return Outcome{Code: MemberIDRequired, MemberID: id}
	case id == "":
		id = g.newID(req.idPrefix())
	case pending:
		delete(g.pending, id)
	case !known:
		return Outcome{Code: UnknownMemberID, MemberID: id}
	}
	if !known {
		m = &member{}
		g.members[id] = m
	} else if m.parked {
		out.Replies = append(out.Replies, JoinReply{ReplyTo: m.replyTo, Code: RebalanceInProgress, MemberID: id})
	}
	m.rec.MemberID = id
	g.updateMember(m, req, assignors, now)
	if static {
		g.statics[req.InstanceID] = id
	}
	switch {
	case g.state != PreparingRebalance:
		g.startRebalance(now, g.state == Empty)
	case !known && g.initialDelay:
		g.delayUntil = now.Add(g.cfg.InitialRebalanceDelay)
	}
	m.joined, m.parked, m.replyTo = true, true, req.ReplyTo
	out.MemberID = id
	out.merge(g.maybeComplete(now, parts))
	return g.settle(out)
}

// updateMember takes a join's subscription, protocols and timeouts into
// the member's record; its assignment stays until the next generation.
func (g *Group) updateMember(m *member, req JoinRequest, assignors []string, now time.Time) {
	rebalanceTimeout := req.RebalanceTimeout
	if rebalanceTimeout <= 0 {
		rebalanceTimeout = req.SessionTimeout
	}
	m.rec = MemberRecord{
		MemberID:         m.rec.MemberID,
		ClientID:         req.ClientID,
		Topics:           slices.Compact(slices.Sorted(slices.Values(req.Topics))),
		Assignors:        assignors,
		SessionTimeout:   req.SessionTimeout,
		RebalanceTimeout: rebalanceTimeout,
		Push:             req.Push,
		AutoOffsetReset:  req.AutoOffsetReset,
		Assignment:       m.rec.Assignment,
		ProtocolType:     req.ProtocolType,
		Protocols:        slices.Clone(req.Protocols),
		RelayAssignment:  m.rec.RelayAssignment,
		InstanceID:       req.InstanceID,
	}
	if m.push() {
		m.rec.InstanceID = ""
	}
	g.protocolType = req.ProtocolType
	m.lastSeen = now
}

// Sync returns the member's assignment for generation. Errors: a
// generation other than the current one is ILLEGAL_GENERATION, then an
// unknown member UNKNOWN_MEMBER_ID, then a rebalance in progress
// REBALANCE_IN_PROGRESS (the member must rejoin). It refreshes the member's
// last-seen time.
func (g *Group) Sync(memberID string, generation int32, now time.Time) ([]TopicPartitions, Code) {
	m, code := g.current(memberID, generation)
	if code != None {
		return nil, code
	}
	m.lastSeen = now
	if g.state == PreparingRebalance {
		return nil, RebalanceInProgress
	}
	return cloneAssignment(m.rec.Assignment), None
}

// Heartbeat keeps a member alive. Errors as Sync; REBALANCE_IN_PROGRESS
// tells the member to rejoin, and still counts as a heartbeat.
func (g *Group) Heartbeat(memberID string, generation int32, now time.Time) Code {
	m, code := g.current(memberID, generation)
	if code != None {
		return code
	}
	m.lastSeen = now
	if g.state == PreparingRebalance {
		return RebalanceInProgress
	}
	return None // also while a relay group waits for its leader's sync, as in Kafka
}

// CommitCheck says whether an OffsetCommit may be written.
//
// Generation -1 with an empty member id is an admin commit: allowed only
// while the group has no members, NON_EMPTY_GROUP otherwise (Kafka answers
// UNKNOWN_MEMBER_ID; this names the reason). A member's commit is checked
// generation first, so that a zombie evicted in an earlier generation gets
// ILLEGAL_GENERATION, then membership (UNKNOWN_MEMBER_ID). A current member
// may commit while the group is preparing a rebalance, as in Kafka: it
// still owns its partitions until the next generation is formed, and this
// is when a consumer commits what it processed before it rejoins.
// Commits do not refresh the member's last-seen time.
func (g *Group) CommitCheck(memberID string, generation int32) Code {
	if generation == -1 && memberID == "" {
		if len(g.members) > 0 {
			return NonEmptyGroup
		}
		return None
	}
	_, code := g.current(memberID, generation)
	return code
}

// AckCheck says whether a push member's acknowledgement (PushAck) of
// records of a partition, pushed to it in generation, may be committed.
// The member must own the partition now and must have owned it without a
// break since generation: an ack that arrives after the partition moved to
// another member (and perhaps back) would overwrite the commits of the
// owner in between. Unlike CommitCheck, an ack from an earlier generation
// is accepted for a partition the member kept across the rebalances since:
// push members do not commit before they rejoin, the broker rejoins them.
// Errors: UNKNOWN_MEMBER_ID for a member not in the group, else
// ILLEGAL_GENERATION (a partition not owned, owned only since a later
// generation, or a generation ahead of the group's).
func (g *Group) AckCheck(memberID string, generation int32, topic string, partition int32) Code {
	m, ok := g.members[memberID]
	if !ok {
		return UnknownMemberID
	}
	since, owned := m.since[tp{topic, partition}]
	if !owned || generation < since || generation > g.generation {
		return IllegalGeneration
	}
	return None
}

// ownedSince carries over, for each partition of next, the generation since
// which the member has owned it; partitions new to it start at gen.
func ownedSince(prev map[tp]int32, next []TopicPartitions, gen int32) map[tp]int32 {
	out := map[tp]int32{}
	for _, x := range fromAssignment(next) {
		if s, ok := prev[x]; ok {
			out[x] = s
		} else {
			out[x] = gen
		}
	}
	return out
}

// Leave removes a member at once (LeaveGroup, Unsubscribe, or the actor
// saw a push member's actor die). A parked join of the member is answered
// UNKNOWN_MEMBER_ID. The group rebalances among those left, or becomes
// Empty (ending the generation); Persist is set either way. A pending id
// from MEMBER_ID_REQUIRED is forgotten. Unknown: UNKNOWN_MEMBER_ID.
func (g *Group) Leave(memberID string, now time.Time, parts PartitionCounts) Outcome {
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		return Outcome{}
	}
	m, ok := g.members[memberID]
	if !ok {
		return Outcome{Code: UnknownMemberID}
	}
	out := Outcome{Persist: true, Removed: []string{memberID}}
	if m.parked {
		out.Replies = append(out.Replies, JoinReply{ReplyTo: m.replyTo, Code: UnknownMemberID, MemberID: memberID})
	}
	g.remove(memberID)
	if g.state == Stable || g.state == CompletingRebalance {
		g.startRebalance(now, false)
	}
	out.merge(g.maybeComplete(now, parts))
	return g.settle(out)
}

// Tick is called periodically (every ~100 ms). It forgets expired pending
// ids; evicts pull members silent (no join, sync or heartbeat) for longer
// than their session timeout, unless they have a parked join; starts a
// rebalance after an eviction or when a subscribed topic's partition count
// differs from the one the assignment was made for; and completes a
// rebalance whose initial delay or deadline has passed. Push members are
// never evicted by time: the actor calls Leave when their actor dies.
func (g *Group) Tick(now time.Time, parts PartitionCounts) Outcome {
	var out Outcome
	for id, until := range g.pending {
		if now.After(until) {
			delete(g.pending, id)
		}
	}
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		if m.push() || m.joined || now.Sub(m.lastSeen) <= m.rec.SessionTimeout {
			continue
		}
		g.remove(id)
		out.Removed = append(out.Removed, id)
		out.Persist = true
	}
	switch {
	case g.state == CompletingRebalance && len(out.Removed) > 0:
		g.startRebalance(now, false)
	case g.state == Stable && len(out.Removed) > 0:
		g.startRebalance(now, false)
	case g.state == Stable && g.protocolType == "" && g.countsChanged(parts):
		// Relay groups' leaders watch partition counts themselves.
		g.startRebalance(now, false)
	}
	out.merge(g.maybeComplete(now, parts))
	return g.settle(out)
}

// PartitionsChanged starts a rebalance of a Stable group because a
// subscribed topic appeared or its partition count changed. (Tick notices
// that too, by itself; this saves waiting for it.)
func (g *Group) PartitionsChanged(now time.Time, parts PartitionCounts) Outcome {
	if g.state != Stable || g.protocolType != "" {
		return Outcome{}
	}
	g.startRebalance(now, false)
	return g.settle(g.maybeComplete(now, parts))
}

// current checks a member's generation, then its membership.
func (g *Group) current(memberID string, generation int32) (*member, Code) {
	if generation != g.generation {
		return nil, IllegalGeneration
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, UnknownMemberID
	}
	return m, None
}

func (g *Group) remove(id string) {
	m := g.members[id]
	if m != nil && m.syncParked {
		g.owed = append(g.owed, SyncReply{ReplyTo: m.syncReplyTo, Code: UnknownMemberID, MemberID: id})
	}
	if m != nil && m.rec.InstanceID != "" && g.statics[m.rec.InstanceID] == id {
		delete(g.statics, m.rec.InstanceID)
	}
	delete(g.members, id)
	if len(g.members) == 0 {
		g.protocolType = ""
	}
	if g.leader == id {
		g.leader = ""
		if ids := g.MemberIDs(); len(ids) > 0 {
			g.leader = ids[0]
		}
	}
}

// implemented keeps the assignor names this package implements, in order.
func (g *Group) implemented(names []string) []string {
	if len(names) == 0 && g.cfg.DefaultAssignor != "" {
		names = []string{g.cfg.DefaultAssignor}
	}
	var out []string
	for _, n := range names {
		if _, ok := Lookup(n); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// supports reports whether assignors has one that every member other than
// except also supports (Kafka's supportsProtocols).
func (g *Group) supports(assignors []string, except string) bool {
	return slices.ContainsFunc(assignors, func(a string) bool {
		for id, m := range g.members {
			if id != except && !slices.Contains(m.rec.Assignors, a) {
				return false
			}
		}
		return true
	})
}

func (g *Group) newID(clientID string) string {
	if clientID == "" {
		clientID = "member"
	}
	for {
		g.seq++
		var id string
		if g.cfg.NewMemberID != nil {
			id = g.cfg.NewMemberID(clientID, g.seq)
		} else {
			id = fmt.Sprintf("%s-%d", clientID, g.seq)
		}
		_, member := g.members[id]
		_, pending := g.pending[id]
		if !member && !pending && id != "" {
			return id
		}
	}
}
