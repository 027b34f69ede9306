package replication

// EpochEnd answers, for a replica's own log, the largest leader epoch <=
// epoch that wrote batches and the offset where it ends (the start of the
// next epoch, or the LEO). ok is false when the log holds no such epoch.
type EpochEnd func(epoch int32) (foundEpoch int32, endOffset int64, ok bool)

// Truncation is a follower's decision after one OffsetForLeaderEpoch round.
type Truncation struct {
	// TruncateTo is the offset to truncate the log to (a no-op when it is at
	// or above the LEO).
	TruncateTo int64
	// Done is false when the follower must ask the leader again, with its
	// latest epoch after this truncation (KIP-279).
	Done bool
}

// TruncationStep decides how far a follower truncates before fetching,
// given the leader's answer (leaderEpoch, leaderEnd) to the question "where
// does my latest epoch end in your log?" (Kafka's getOffsetTruncationState):
//
//   - the leader knows no epoch at or below ours (leaderEpoch < 0): our whole
//     log may diverge; keep only what the leader is known to hold, the HW;
//   - the leader's epoch is also in our log: both logs agree up to where that
//     epoch ends in both; truncate there, done;
//   - the leader answered with an epoch we do not have: truncate to where our
//     largest epoch below it ends and ask again.
//
// It never truncates below hw... except for the first case, where hw is the
// answer. The result is never above leo.
func TruncationStep(leaderEpoch int32, leaderEnd int64, own EpochEnd, leo, hw int64) Truncation {
	if leaderEpoch < 0 || leaderEnd < 0 {
		return Truncation{TruncateTo: min(hw, leo), Done: true}
	}
	followerEpoch, followerEnd, ok := own(leaderEpoch)
	if !ok {
		// None of our epochs is at or below the leader's: nothing of ours is
		// known to match. Keep what the HW guarantees.
		return Truncation{TruncateTo: min(hw, leo), Done: true}
	}
	if followerEpoch != leaderEpoch {
		return Truncation{TruncateTo: min(followerEnd, leo), Done: false}
	}
	return Truncation{TruncateTo: min(followerEnd, leaderEnd, leo), Done: true}
}

// FollowerHighWatermark is a follower's HW after a fetch: the leader's HW,
// capped by what the follower itself holds, never going back.
func FollowerHighWatermark(current, leaderHW, leo int64) int64 {
	return max(current, min(leaderHW, leo))
}
