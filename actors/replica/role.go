package replica

import (
	"slices"

	"github.com/sluicemq/sluice/messages"
)

// Role is what a replica currently is for its partition.
type Role int

const (
	// NoRole: no usable state yet, an offline partition, or no log.
	NoRole Role = iota
	Leader
	Follower
)

// Change is a controller state handed to a replica, with what the
// replica knows of itself.
type Change struct {
	// Self is this replica's broker id, and BrokerEpoch this run's epoch
	// of that broker (0: unknown).
	Self        int32
	BrokerEpoch int64
	// Current is the state the replica last took (nil: none yet), Next
	// the one handed to it.
	Current, Next *messages.PartitionState
	// Role is what the replica is now; FollowingAddr the address of the
	// leader's broker it follows (as Follower), LeaderAddr the one Next's
	// leader is at ("" while that broker is not known alive).
	Role                      Role
	FollowingAddr, LeaderAddr string
	// HasLog: the replica's log is open. LostRecords: the log came back
	// shorter than its checkpointed HW (records the others have are
	// missing here).
	HasLog, LostRecords bool
}

// Step is what a replica does with a Change.
type Step int

const (
	// Ignore a state older than the one taken.
	Ignore Step = iota
	// Readdress: the same state; a follower whose leader's address
	// changed follows it at the new address, anyone else only notes it.
	Readdress
	// Unusable: without a log the replica takes no role and reports
	// itself.
	Unusable
	// YieldToInSync: named leader, but it lost records the other in-sync
	// replicas have: it takes no role and reports itself offline, so one
	// of them leads.
	YieldToInSync
	// AwaitDecision: named leader in an earlier run of this broker (whose
	// log may be gone with that run's disk): no role until the controller
	// decides anew.
	AwaitDecision
	// ISRChanged: the leader stays leader; only the ISR or the replica set
	// changed under the same leader epoch.
	ISRChanged
	// Lead: become the leader.
	Lead
	// KeepFollowing: the ISR changed; the follower fetches on from the
	// same leader.
	KeepFollowing
	// Follow: become a follower of Next's leader.
	Follow
	// StepDown: no leader, or this replica is no longer one of the
	// partition's (moved away, its broker removes it): no role.
	StepDown
)

// Decide says what a replica does with a newer controller state, as Kafka
// replicas do with LeaderAndIsr: states order by leader epoch, then
// partition epoch.
func Decide(c Change) Step {
	cur, st := c.Current, c.Next
	if cur != nil && (st.LeaderEpoch < cur.LeaderEpoch || st.LeaderEpoch == cur.LeaderEpoch && st.PartitionEpoch < cur.PartitionEpoch) {
		return Ignore
	}
	if cur != nil && st.LeaderEpoch == cur.LeaderEpoch && st.PartitionEpoch == cur.PartitionEpoch {
		return Readdress
	}
	sameEpoch := cur != nil && st.LeaderEpoch == cur.LeaderEpoch
	leads := st.Leader == c.Self
	switch {
	case len(st.Replicas) > 0 && !slices.Contains(st.Replicas, c.Self):
		return StepDown
	case !c.HasLog:
		return Unusable
	case leads && c.LostRecords && slices.ContainsFunc(st.Isr, func(id int32) bool { return id != c.Self }):
		return YieldToInSync
	case leads && earlierRun(st, c.Self, c.BrokerEpoch):
		return AwaitDecision
	case leads && sameEpoch && c.Role == Leader:
		return ISRChanged
	case leads:
		return Lead
	case st.Leader >= 0 && sameEpoch && c.Role == Follower && c.LeaderAddr == c.FollowingAddr:
		return KeepFollowing
	case st.Leader >= 0:
		return Follow
	}
	return StepDown
}

// earlierRun reports whether st records self in the ISR under another
// broker epoch than this run's.
func earlierRun(st *messages.PartitionState, self int32, brokerEpoch int64) bool {
	recorded := st.IsrEpochs[self]
	return recorded != 0 && brokerEpoch != 0 && recorded != brokerEpoch
}
