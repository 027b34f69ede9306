package consumergroup

import (
	"fmt"
	"time"

	"github.com/sluicemq/sluice/actors/groups"
)

// Code is the error a call answers with. The names are those of the
// protobuf ErrorCode enum (Kafka's); the actor maps a Code by String().
type Code int16

const (
	None Code = iota
	// UnknownMemberID: the member id is not a member (it left, was removed,
	// or the group started over); the member rejoins with epoch 0.
	UnknownMemberID
	// FencedMemberEpoch: the heartbeat's epoch is not the member's (nor its
	// previous one after a lost answer); it rejoins with epoch 0.
	FencedMemberEpoch
	// StaleMemberEpoch: a commit from an epoch the member has left, for a
	// partition it did not hold then.
	StaleMemberEpoch
	// UnsupportedAssignor: a server assignor other than "uniform" or "range".
	UnsupportedAssignor
	// UnreleasedInstanceID: a static member's instance id is held by another
	// member that has not left.
	UnreleasedInstanceID
	// FencedInstanceID: the member id does not hold the instance id it names.
	FencedInstanceID
	// InvalidRequest: a heartbeat that breaks the protocol's rules (the
	// Message says which).
	InvalidRequest
	// InvalidRegularExpression: a subscription's regular expression does
	// not compile.
	InvalidRegularExpression
	// GroupMaxSizeReached: a new member would exceed Config.MaxSize.
	GroupMaxSizeReached
	// NonEmptyGroup: an admin commit (no member) while the group has members.
	NonEmptyGroup
)

var codeNames = [...]string{
	None:                     "NONE",
	UnknownMemberID:          "UNKNOWN_MEMBER_ID",
	FencedMemberEpoch:        "FENCED_MEMBER_EPOCH",
	StaleMemberEpoch:         "STALE_MEMBER_EPOCH",
	UnsupportedAssignor:      "UNSUPPORTED_ASSIGNOR",
	UnreleasedInstanceID:     "UNRELEASED_INSTANCE_ID",
	FencedInstanceID:         "FENCED_INSTANCE_ID",
	InvalidRequest:           "INVALID_REQUEST",
	InvalidRegularExpression: "INVALID_REGULAR_EXPRESSION",
	GroupMaxSizeReached:      "GROUP_MAX_SIZE_REACHED",
	NonEmptyGroup:            "NON_EMPTY_GROUP",
}

// String returns the protobuf enum name of c, e.g. "FENCED_MEMBER_EPOCH".
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "UNKNOWN_SERVER_ERROR"
}

// Assignor names a member may ask for (ServerAssignor).
const (
	Uniform = "uniform"
	Range   = "range"
)

var assignors = map[string]groups.AssignFunc{Uniform: groups.Sticky, Range: groups.Range}

// Config tunes a group; start from DefaultConfig.
type Config struct {
	// SessionTimeout removes a member that has not heartbeat for this long
	// (group.consumer.session.timeout.ms).
	SessionTimeout time.Duration
	// HeartbeatInterval is how often members are told to heartbeat
	// (group.consumer.heartbeat.interval.ms).
	HeartbeatInterval time.Duration
	// DefaultAssignor serves members that name none.
	DefaultAssignor string
	// MaxSize bounds the members (group.consumer.max.size); 0: no bound.
	MaxSize int
	// RegexRefresh is how often Tick matches the regular expressions of
	// subscriptions against the topics again.
	RegexRefresh time.Duration
	// NewMemberID names a member that joins without an id (ConsumerGroup-
	// Heartbeat v0, where the coordinator names members); nil refuses such
	// a join as INVALID_REQUEST.
	NewMemberID func() string
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second,
		DefaultAssignor: Uniform, RegexRefresh: 10 * time.Second}
}

// Validate reports the first setting out of range, naming it.
func (c Config) Validate() error {
	switch {
	case c.SessionTimeout <= 0:
		return fmt.Errorf("session timeout %v: must be > 0", c.SessionTimeout)
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.SessionTimeout:
		return fmt.Errorf("heartbeat interval %v: must be > 0 and below the session timeout %v", c.HeartbeatInterval, c.SessionTimeout)
	case assignors[c.DefaultAssignor] == nil:
		return fmt.Errorf("default assignor %q: must be %q or %q", c.DefaultAssignor, Uniform, Range)
	case c.MaxSize < 0:
		return fmt.Errorf("max size %d: must be >= 0", c.MaxSize)
	case c.RegexRefresh < 0:
		return fmt.Errorf("regex refresh %v: must be >= 0", c.RegexRefresh)
	}
	return nil
}

// Catalog is what the group knows of the cluster's topics.
type Catalog struct {
	// Partitions tells a topic's partition count (0: no such topic).
	Partitions func(topic string) int32
	// Topics lists every topic, for regular expression subscriptions.
	Topics func() []string
	// Describable tells whether principal may describe topic: a regular
	// expression subscribes a member only to the matching topics its
	// principal may describe, as Kafka. Nil: every topic.
	Describable func(principal, topic string) bool
	// Version changes whenever the topics, their partition counts or what
	// principals may describe may have changed; while it stays, Tick reads
	// nothing of the catalog. Nil: Tick reads it every time.
	Version func() uint64
}

// version returns the catalog's version, and false when it has none.
func (c Catalog) version() (uint64, bool) {
	if c.Version == nil {
		return 0, false
	}
	return c.Version(), true
}

// Heartbeat is one ConsumerGroupHeartbeat. The fields Kafka makes
// nullable ("unchanged since the last heartbeat") have a Set flag or a
// negative value for null.
type Heartbeat struct {
	MemberID string
	// MemberEpoch: 0 joins (or rejoins), -1 leaves, -2 leaves a static
	// member's place open for its session timeout; otherwise the epoch the
	// member is at.
	MemberEpoch int32
	InstanceID  string
	RackID      string
	// RebalanceTimeout bounds how long the member may take to revoke; < 0:
	// unchanged.
	RebalanceTimeout time.Duration
	Topics           []string
	TopicsSet        bool
	Regex            string
	RegexSet         bool
	// Assignor is the server assignor asked for ("": unchanged, or the
	// default).
	Assignor string
	// Owned is what the member holds now.
	Owned    []groups.TopicPartitions
	OwnedSet bool
	ClientID string
	// ClientHost is where the member connects from, for Describe.
	ClientHost string
	// Principal is who sent the heartbeat, for what its regular
	// expression may match (Catalog.Describable).
	Principal string
}

// full reports whether h carries everything a member has: Kafka answers
// such a heartbeat with the member's whole assignment even when it did
// not change, which heals an answer lost before.
func (h Heartbeat) full() bool {
	return h.MemberEpoch == 0 || (h.RebalanceTimeout >= 0 && (h.TopicsSet || h.RegexSet) && h.OwnedSet)
}

// Reply answers a Heartbeat.
type Reply struct {
	Code    Code
	Message string
	// MemberID and MemberEpoch are the member's after the call (-1 or -2
	// echoed for a leave).
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is what the member is to hold, sent when HasAssignment:
	// it changed since the last answer, or the heartbeat was full.
	Assignment    []groups.TopicPartitions
	HasAssignment bool
}

// Outcome tells the actor what a Tick did.
type Outcome struct {
	// Removed lists, sorted, the members removed: silent past the session
	// timeout, or not revoking within their rebalance timeout.
	Removed []string
	// EpochBumped: the group epoch moved (members will be told of new
	// targets on their next heartbeats).
	EpochBumped bool
}

// MemberState is where a member is in reaching its target.
type MemberState int8

const (
	// Stable: the member holds its target at the group's assignment epoch.
	Stable MemberState = iota
	// UnrevokedPartitions: the member must first give up partitions.
	UnrevokedPartitions
	// UnreleasedPartitions: the member waits for partitions another member
	// still holds.
	UnreleasedPartitions
)

func (s MemberState) String() string {
	switch s {
	case Stable:
		return "stable"
	case UnrevokedPartitions:
		return "unrevoked_partitions"
	case UnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "unknown"
}

// MemberDescription is one member as Describe shows it.
type MemberDescription struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost string
	MemberEpoch                                        int32
	State                                              MemberState
	Topics                                             []string
	Regex                                              string
	Assignor                                           string
	// Assignment is what the member holds (being revoked included);
	// Target is what the group's target assignment gives it.
	Assignment []groups.TopicPartitions
	Target     []groups.TopicPartitions
}

// Description is a group as ConsumerGroupDescribe shows it. Members are
// sorted by id.
type Description struct {
	// State is Kafka's: Empty, Reconciling (some member has not reached
	// its target) or Stable.
	State           string
	Epoch           int32
	AssignmentEpoch int32
	Assignor        string
	Members         []MemberDescription
}
