package groups

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// TopicPartitions is a set of partitions of one topic. Assignments are
// always sorted by topic and then partition, without duplicates, so that
// they compare and persist stably.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// PartitionCounts tells how many partitions a topic has; 0 for a topic that
// does not exist or that the caller does not know (it gets no members).
// A nil PartitionCounts knows no topic.
type PartitionCounts func(topic string) int32

// PushTarget is the application actor a push member's records go to, and
// the credit it subscribed with. All of it is opaque here; it is persisted
// with the member so that a new coordinator restarts the member's pusher
// as it was subscribed. The zero value means a pull member.
type PushTarget struct {
	Address string
	ID      string
	// Credit is the number of records the actor accepts before it grants
	// more (0: the actor's default).
	Credit int32
	// Principal subscribed the actor ("" from the broker's own process):
	// only it may grant credit to and acknowledge for the member.
	Principal string
}

// IsZero reports whether t names no actor (a pull member).
func (t PushTarget) IsZero() bool { return t.Address == "" && t.ID == "" }

// JoinRequest is a JoinGroup (or, with Push set, a Subscribe).
type JoinRequest struct {
	// MemberID is empty on a member's first join.
	MemberID string
	ClientID string
	Topics   []string
	// Assignors the member supports, preferred first. Names this package
	// does not implement are ignored; an empty list means
	// Config.DefaultAssignor.
	Assignors []string
	// SessionTimeout must lie within the Config bounds (not checked for
	// push members, which are never evicted by time).
	SessionTimeout time.Duration
	// RebalanceTimeout is how long a rebalance waits for this member to
	// rejoin; <= 0 means SessionTimeout (as JoinGroup v0).
	RebalanceTimeout time.Duration
	Push             PushTarget
	AutoOffsetReset  string
	// ProtocolType, when set, makes the member a relay member (Kafka's
	// classic protocol): the coordinator does not assign, the group's
	// leader does. Protocols are then its assignment protocols, preferred
	// first, each with the member's opaque metadata; Assignors is ignored.
	ProtocolType string
	Protocols    []Protocol
	// RequireMemberID asks MEMBER_ID_REQUIRED of this first join as
	// Config.RequireMemberID does (Kafka's JoinGroup v4+).
	RequireMemberID bool
	// InstanceID makes a pull member static (Kafka's group.instance.id;
	// see Instance): a first join under it needs no MEMBER_ID_REQUIRED,
	// and a rejoin with an empty MemberID takes over the member.
	InstanceID string
	// ReplyTo is opaque: it comes back in the JoinReply that answers this
	// request, so the actor can find the request to answer.
	ReplyTo any
}

// Protocol is one assignment protocol a relay member supports, with the
// member's metadata for it (its subscription, in the protocol's encoding).
type Protocol struct {
	Name     string
	Metadata []byte
}

// MemberMetadata is one member's metadata for the chosen protocol, as the
// leader of a relay group gets it.
type MemberMetadata struct {
	MemberID string
	Metadata []byte
}

// SyncReply answers a relay member's SyncGroup: its opaque assignment, or
// an error.
type SyncReply struct {
	ReplyTo    any
	Code       Code
	MemberID   string
	Assignment []byte
}

// JoinReply answers a parked join.
type JoinReply struct {
	ReplyTo any
	// Code is None for a completed rebalance. A join superseded by a newer
	// join of the same member gets RebalanceInProgress, and one whose member
	// left before the rebalance completed gets UnknownMemberID; the other
	// fields are then zero except MemberID.
	Code       Code
	Generation int32
	MemberID   string
	LeaderID   string
	Assignor   string
	// Members of the new generation, sorted.
	Members []string
	// Assignment of this member in the new generation (what Sync returns).
	Assignment []TopicPartitions
	// Relay groups: the protocol chosen (also in Assignor) and, for the
	// leader only, every member's metadata for it, sorted by member id.
	Protocol       string
	MemberMetadata []MemberMetadata
}

// Outcome tells the actor what to do after a call.
//
// The order is: if Persist, write Snapshot() to __consumer_offsets; once
// the write succeeded, send Replies (if it failed, answer each of them with
// a coordinator error instead: the members will rejoin); notify the push
// members named in Changed of their new assignment.
type Outcome struct {
	// Code answers the request itself. For Join: None means the join is
	// parked and its answer is among the Replies of this or a later
	// Outcome; anything else is to be answered at once (MEMBER_ID_REQUIRED
	// with MemberID).
	Code Code
	// MemberID is the joining member's id (generated for a new member).
	MemberID string
	// Replies to parked joins, sorted by member id (a superseded join
	// before the one that replaced it).
	Replies []JoinReply
	// Persist: the group metadata changed; write Snapshot() before replying.
	Persist bool
	// Rebalanced: a new generation was formed (or the group became Empty,
	// which also ends a generation).
	Rebalanced bool
	// Changed lists, sorted, the members whose assignment changed. A member
	// whose partitions stayed the same is not listed although the generation
	// moved; when Rebalanced, Generation() is the new one.
	Changed []string
	// Removed lists, sorted, the members this call removed: left, evicted
	// after their session timeout, or not rejoined by the rebalance deadline.
	// Their assignments are void (stop pushing to push members among them).
	Removed []string
	// SyncReplies answer parked relay syncs (after Persist, as Replies).
	SyncReplies []SyncReply
}

func (o *Outcome) merge(p Outcome) {
	o.Replies = append(o.Replies, p.Replies...)
	slices.SortStableFunc(o.Replies, func(a, b JoinReply) int { return strings.Compare(a.MemberID, b.MemberID) })
	o.Persist = o.Persist || p.Persist
	o.Rebalanced = o.Rebalanced || p.Rebalanced
	o.Changed = append(o.Changed, p.Changed...)
	o.Removed = append(o.Removed, p.Removed...)
	slices.Sort(o.Removed)
	o.SyncReplies = append(o.SyncReplies, p.SyncReplies...)
}

// MemberRecord is one member as persisted and described.
type MemberRecord struct {
	MemberID         string
	ClientID         string
	Topics           []string // sorted, without duplicates
	Assignors        []string // preferred first, only implemented names
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	Push             PushTarget
	AutoOffsetReset  string
	Assignment       []TopicPartitions
	// Relay members: the protocol type and protocols they joined with, and
	// the opaque assignment the leader gave them.
	ProtocolType    string
	Protocols       []Protocol
	RelayAssignment []byte
	// InstanceID is a static member's group instance id ("": dynamic).
	InstanceID string
}

func (r MemberRecord) clone() MemberRecord {
	r.Topics = slices.Clone(r.Topics)
	r.Assignors = slices.Clone(r.Assignors)
	r.Assignment = cloneAssignment(r.Assignment)
	r.Protocols = slices.Clone(r.Protocols)
	r.RelayAssignment = slices.Clone(r.RelayAssignment)
	return r
}

// Snapshot is the persistable group metadata (GroupMetadataValue).
// Members are sorted by id.
type Snapshot struct {
	Generation int32
	Assignor   string
	Leader     string
	Members    []MemberRecord
}

// Description is what `sluice group describe` shows. Members are sorted by id.
type Description struct {
	State      State
	Generation int32
	Assignor   string
	Leader     string
	Members    []MemberRecord
}

// Config bounds and tunes a group. Values are taken literally; start from
// DefaultConfig.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min/max.session.timeout.ms).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is how long an Empty group's first rebalance
	// waits for more members (group.initial.rebalance.delay.ms); every new
	// member extends it by as much, up to the largest rebalance timeout.
	// 0 completes the first rebalance as soon as its members have joined.
	InitialRebalanceDelay time.Duration
	// DefaultAssignor stands in for an empty assignor list.
	DefaultAssignor string
	// RequireMemberID answers a pull member's first join (empty member id)
	// with MEMBER_ID_REQUIRED and a generated id to rejoin with, as Kafka
	// does since KIP-394, so that a client retrying its first join does not
	// leave a ghost member. Push members are never asked.
	RequireMemberID bool
	// NewMemberID makes the id of a new member from its client id and the
	// group's counter (1, 2, ...); nil makes "<clientID>-<seq>" (an empty
	// client id reads "member"). It must give distinct, non-empty ids for
	// distinct seq; ids already in use are skipped. The counter starts over on Restore, so an id may
	// repeat that of a member gone before a failover; inject a function
	// that adds something unique per coordinator if that matters.
	NewMemberID func(clientID string, seq uint64) string
	// MaxSize bounds the members of the group, those waiting to rejoin
	// with the id MEMBER_ID_REQUIRED gave them included (Kafka's
	// group.max.size); 0: no bound.
	MaxSize int
}

// MaxMemberMetadataBytes bounds what one member's join carries: its
// topics, assignor names and protocols with their metadata.
const MaxMemberMetadataBytes = 1 << 20

// Bytes is how much of a join's content the group keeps.
func (r JoinRequest) Bytes() int {
	n := len(r.ClientID) + len(r.InstanceID) + len(r.ProtocolType)
	for _, t := range r.Topics {
		n += len(t)
	}
	for _, a := range r.Assignors {
		n += len(a)
	}
	for _, p := range r.Protocols {
		n += len(p.Name) + len(p.Metadata)
	}
	return n
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		InitialRebalanceDelay: 300 * time.Millisecond,
		DefaultAssignor:       "range",
	}
}

// Validate reports the first setting out of range, naming it.
func (c Config) Validate() error {
	switch {
	case c.MinSessionTimeout <= 0:
		return fmt.Errorf("min session timeout %v: must be > 0", c.MinSessionTimeout)
	case c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("max session timeout %v: must be >= min session timeout %v", c.MaxSessionTimeout, c.MinSessionTimeout)
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("initial rebalance delay %v: must be >= 0", c.InitialRebalanceDelay)
	case c.MaxSize < 0:
		return fmt.Errorf("max size %d: must be >= 0", c.MaxSize)
	}
	if _, ok := Lookup(c.DefaultAssignor); c.DefaultAssignor != "" && !ok {
		return fmt.Errorf("default assignor %q: not one of %v", c.DefaultAssignor, AssignorNames())
	}
	return nil
}

func cloneAssignment(a []TopicPartitions) []TopicPartitions {
	if len(a) == 0 {
		return nil
	}
	out := make([]TopicPartitions, len(a))
	for i, tp := range a {
		out[i] = TopicPartitions{Topic: tp.Topic, Partitions: slices.Clone(tp.Partitions)}
	}
	return out
}

func equalAssignment(a, b []TopicPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y TopicPartitions) bool {
		return x.Topic == y.Topic && slices.Equal(x.Partitions, y.Partitions)
	})
}
