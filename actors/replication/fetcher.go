package replication

import "time"

// Backoff bounds of a follower whose requests to the leader fail.
const (
	MinFollowerBackoff = 50 * time.Millisecond
	MaxFollowerBackoff = time.Second
)

// LogState is what a follower's decisions read of its own log.
type LogState struct {
	Start int64 // log start offset
	End   int64 // log end offset (LEO)
	// LatestEpoch is the leader epoch of the last batch; -1 for a log with
	// no batch.
	LatestEpoch int32
}

// Step is what a follower does next towards its leader.
type Step struct {
	Kind StepKind
	// Epoch is the epoch an AskEpochEnd asks about: the log's latest.
	Epoch int32
	// Offset is where a Fetch starts: the log's end, which tells the
	// leader what the follower holds.
	Offset int64
	// Backoff is how long a Wait lasts; Reason says why it waits.
	Backoff time.Duration
	Reason  string
}

// StepKind names a follower's next request, or a pause.
type StepKind int

const (
	// AskEpochEnd asks the leader where Epoch ends in its log
	// (OffsetForLeaderEpoch), then EpochAnswered takes the answer.
	AskEpochEnd StepKind = iota
	// Fetch asks the leader for batches from Offset (ReplicaFetch), then
	// FetchAnswered takes the answer.
	Fetch
	// Wait pauses for Backoff, then Next gives the request to send.
	Wait
)

// FetchAnswer is a leader's answer to a follower's fetch, reduced to what
// the follower decides on.
type FetchAnswer struct {
	Result FetchResult
	// Reason is the leader's message for FetchFailed.
	Reason string
	// HasBatches is true when the answer carries batches to append.
	HasBatches bool
	// HighWatermark and LogStart are the leader's.
	HighWatermark int64
	LogStart      int64
}

// FetchResult classifies a fetch answer.
type FetchResult int

const (
	FetchOK FetchResult = iota
	// FetchOutOfRange: the fetch offset is outside the leader's log.
	FetchOutOfRange
	// FetchFailed: any other refusal (not leader, fenced epoch, storage).
	FetchFailed
)

// FetchAction is what the follower does with a fetch answer.
type FetchAction int

const (
	// Append the answer's batches, make them durable, then call Synced.
	AppendBatches FetchAction = iota
	// ResetLog: the leader no longer holds what the follower lacks; start
	// the log over empty at ResetTo, then call LogReset.
	ResetLog
	// SendNext: carry out the decision's Next step.
	SendNext
)

// FetchDecision is the follower's decision on one fetch answer.
type FetchDecision struct {
	Action  FetchAction
	ResetTo int64 // for ResetLog
	Next    Step  // for SendNext
}

// Follower is the fetch loop of a follower replica, as plain state: first
// truncate by leader epoch until the logs agree (KIP-101, KIP-279), then
// fetch from the log's end, append, make durable and fetch again, taking
// the leader's high watermark capped by what is held. Failed requests back
// off, doubling up to MaxFollowerBackoff.
//
// The partition actor sends the requests, writes and syncs the log and
// runs the timers; it reports each outcome and carries out the Step or
// FetchDecision that comes back. Not safe for concurrent use.
type Follower struct {
	leader int32
	epoch  int32
	hw     int64
	// truncated is set once truncation by epoch agrees with the leader;
	// only then are fetched batches and the leader's HW taken.
	truncated bool
	backoff   time.Duration
}

// NewFollower starts following leader under epoch from a log in the given
// state, with hw the replica's high watermark so far (kept inside the log).
func NewFollower(leader, epoch int32, hw int64, log LogState) *Follower {
	return &Follower{leader: leader, epoch: epoch, hw: min(max(hw, log.Start), log.End)}
}

// Leader is the broker id followed.
func (f *Follower) Leader() int32 { return f.leader }

// Epoch is the leader epoch followed: every request carries it.
func (f *Follower) Epoch() int32 { return f.epoch }

// HighWatermark is the follower's high watermark.
func (f *Follower) HighWatermark() int64 { return f.hw }

// Truncated reports whether the log is known to agree with the leader's.
func (f *Follower) Truncated() bool { return f.truncated }

// Next is the request to send: an epoch query until the logs agree (none is
// needed for a log with no batch, which cannot diverge), then a fetch.
func (f *Follower) Next(log LogState) Step {
	if !f.truncated && log.LatestEpoch < 0 {
		f.truncated = true
	}
	if !f.truncated {
		return Step{Kind: AskEpochEnd, Epoch: log.LatestEpoch}
	}
	return Step{Kind: Fetch, Offset: log.End}
}

// Failed is the step after a request that got no usable answer (timeout,
// leader unreachable, refusal): wait, longer each time, then ask again.
func (f *Follower) Failed(reason string) Step {
	f.backoff = min(max(2*f.backoff, MinFollowerBackoff), MaxFollowerBackoff)
	return Step{Kind: Wait, Backoff: f.backoff, Reason: reason}
}

// EpochAnswered takes the leader's answer to AskEpochEnd (leaderEpoch -1
// when it has no epoch at or below the one asked) and decides how far to
// truncate, as TruncationStep does. After truncating, the actor calls
// LogTruncated when the log got shorter, then Next.
func (f *Follower) EpochAnswered(leaderEpoch int32, leaderEnd int64, own EpochEnd, log LogState) Truncation {
	step := TruncationStep(leaderEpoch, leaderEnd, own, log.End, f.hw)
	step.TruncateTo = max(step.TruncateTo, log.Start)
	f.backoff = 0
	if step.Done {
		f.truncated = true
	}
	return step
}

// LogTruncated caps the high watermark at the log's new end.
func (f *Follower) LogTruncated(log LogState) {
	f.hw = min(f.hw, log.End)
}

// FetchAnswered decides what to do with the leader's answer to a Fetch.
func (f *Follower) FetchAnswered(ans FetchAnswer, log LogState) FetchDecision {
	switch ans.Result {
	case FetchOutOfRange:
		if ans.LogStart > log.End {
			return FetchDecision{Action: ResetLog, ResetTo: ans.LogStart}
		}
		// The log runs past the leader's: truncate again.
		f.truncated = false
		return FetchDecision{Action: SendNext, Next: f.Next(log)}
	case FetchFailed:
		return FetchDecision{Action: SendNext, Next: f.Failed(ans.Reason)}
	}
	if ans.HasBatches {
		return FetchDecision{Action: AppendBatches}
	}
	return FetchDecision{Action: SendNext, Next: f.Synced(ans.HighWatermark, log)}
}

// AppendRejected is the step after fetched batches did not continue the
// log (the leader's log changed under the fetch): truncate again, after a
// pause.
func (f *Follower) AppendRejected(reason string) Step {
	f.truncated = false
	return f.Failed(reason)
}

// LogReset is the step after the log was started over at the leader's log
// start: nothing below it is held, so the HW is there.
func (f *Follower) LogReset(log LogState) Step {
	f.hw = log.End
	return f.Next(log)
}

// Synced is the step once what the follower appended is durable: take the
// leader's HW (capped by the log, never going back) and fetch again at
// once, since the next fetch offset is what tells the leader the batches
// are here.
func (f *Follower) Synced(leaderHW int64, log LogState) Step {
	f.backoff = 0
	f.hw = FollowerHighWatermark(f.hw, leaderHW, log.End)
	return f.Next(log)
}
