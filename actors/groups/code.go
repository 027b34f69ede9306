package groups

// Code is the error a group operation answers with. The names are those of
// the protobuf ErrorCode enum; the actor maps a Code to it by String().
type Code int16

const (
	// None: the request was accepted.
	None Code = iota
	// UnknownMemberID: the member id is not a member of the group (it left,
	// was evicted, or belongs to a group that started over).
	UnknownMemberID
	// IllegalGeneration: the request carries a generation other than the
	// group's current one; the member must rejoin.
	IllegalGeneration
	// RebalanceInProgress: the group is forming a new generation; the member
	// must rejoin (JoinGroup) to take part.
	RebalanceInProgress
	// InvalidSessionTimeout: the session timeout is outside the configured
	// bounds.
	InvalidSessionTimeout
	// InconsistentGroupProtocol: the member names no assignor that every
	// other member also supports (or none this package implements).
	InconsistentGroupProtocol
	// NonEmptyGroup: an admin offset commit (generation -1, no member id)
	// while the group has members.
	NonEmptyGroup
	// MemberIDRequired: with Config.RequireMemberID, a first join is answered
	// with a member id to rejoin with (Kafka's KIP-394).
	MemberIDRequired
	// FencedInstanceID: a static member's instance id is held by a newer
	// member id; the request came from the one it replaced.
	FencedInstanceID
	// GroupMaxSizeReached: a new member would make the group larger than
	// Config.MaxSize (Kafka's group.max.size).
	GroupMaxSizeReached
	// InvalidRequest: a join whose protocols and their metadata come to
	// more than MaxMemberMetadataBytes.
	InvalidRequest
)

var codeNames = [...]string{
	None:                      "NONE",
	UnknownMemberID:           "UNKNOWN_MEMBER_ID",
	IllegalGeneration:         "ILLEGAL_GENERATION",
	RebalanceInProgress:       "REBALANCE_IN_PROGRESS",
	InvalidSessionTimeout:     "INVALID_SESSION_TIMEOUT",
	InconsistentGroupProtocol: "INCONSISTENT_GROUP_PROTOCOL",
	NonEmptyGroup:             "NON_EMPTY_GROUP",
	MemberIDRequired:          "MEMBER_ID_REQUIRED",
	FencedInstanceID:          "FENCED_INSTANCE_ID",
	GroupMaxSizeReached:       "GROUP_MAX_SIZE_REACHED",
	InvalidRequest:            "INVALID_REQUEST",
}

// String returns the protobuf enum name of c, e.g. "ILLEGAL_GENERATION".
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "UNKNOWN_SERVER_ERROR"
}

// State is where a group is in its membership protocol.
//
// Only relay groups pass through CompletingRebalance: for its own members
// the coordinator computes every assignment the moment the joins are in,
// so such a group goes straight from PreparingRebalance to Stable. There
// is no Dead: a group without
// members is Empty and the actor drops it when it wants to.
type State int8

const (
	// Empty: no members. Offsets may still be committed by an admin.
	Empty State = iota
	// PreparingRebalance: waiting for the members to (re)join; the current
	// generation's assignments stay in force until the next one is formed.
	PreparingRebalance
	// Stable: every member has its assignment for the current generation.
	Stable
	// CompletingRebalance: a relay group's new generation is formed and
	// waits for its leader's SyncGroup with the assignments.
	CompletingRebalance
)

// String is Kafka's name of the state, as `sluice group describe` shows it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case Stable:
		return "Stable"
	case CompletingRebalance:
		return "CompletingRebalance"
	}
	return "Unknown"
}
