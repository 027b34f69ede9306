package replica

import (
	"fmt"

	"github.com/sluicemq/sluice/messages"
)

// IsolationLogEnd is a fetch's isolation level that reads up to the
// leader's durable log end instead of the HW: only this process's own
// readers (a group host replaying its offsets partition) may ask for it;
// consumers never see data at or above the HW.
const IsolationLogEnd = 1

// CheckEpoch fences a request that names another leader epoch than the
// replica's mine (a negative one names none).
func CheckEpoch(epoch, mine int32) (messages.ErrorCode, string) {
	switch {
	case epoch < 0 || epoch == mine:
		return messages.ErrorCode_NONE, ""
	case epoch < mine:
		return messages.ErrorCode_FENCED_LEADER_EPOCH, fmt.Sprintf("request epoch %d, leader epoch %d", epoch, mine)
	default:
		return messages.ErrorCode_UNKNOWN_LEADER_EPOCH, fmt.Sprintf("request epoch %d, leader epoch %d", epoch, mine)
	}
}

// CheckFetch refuses a consumer fetch with impossible fields, or one from
// the network that asks for another isolation level than committed data.
func CheckFetch(req *messages.FetchRequest, fromNetwork bool) (messages.ErrorCode, string) {
	if req.MaxBytes < 0 || req.MinBytes < 0 || req.MaxWaitMs < 0 {
		return messages.ErrorCode_INVALID_REQUEST, "negative max_bytes, min_bytes or max_wait_ms"
	}
	if req.Isolation != 0 && (req.Isolation != IsolationLogEnd || fromNetwork) {
		return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("isolation %d: consumers read committed data only (isolation 0)", req.Isolation)
	}
	return messages.ErrorCode_NONE, ""
}

// LogBounds is what a leader's log holds: [Start, End) written, below
// Durable on disk, below HW in every in-sync replica.
type LogBounds struct {
	Start, End, Durable, HW int64
}

// FetchPlan is how a consumer fetch is served.
type FetchPlan struct {
	// Code, unless NONE, is the error answer, with Reason.
	Code   messages.ErrorCode
	Reason string
	// Read: read the batches from the fetch offset below Limit, MaxBytes
	// at most. Otherwise the answer has no batches: only offsets were
	// asked for, or there is nothing to read yet (the fetch may wait).
	Read     bool
	Limit    int64
	MaxBytes int
	// NothingYet: nothing below the limit after the fetch offset; the
	// fetch waits for data unless it must be answered now.
	NothingYet bool
}

// PlanFetch decides what a consumer fetch reads: below the HW (the
// durable log end for IsolationLogEnd), at most maxFetchBytes (the
// broker's cap, also when the request asks for no limit).
func PlanFetch(req *messages.FetchRequest, b LogBounds, maxFetchBytes int) FetchPlan {
	if req.Offset < b.Start || req.Offset > b.End {
		return FetchPlan{Code: messages.ErrorCode_OFFSET_OUT_OF_RANGE,
			Reason: fmt.Sprintf("offset %d is outside [%d, %d]", req.Offset, b.Start, b.End)}
	}
	limit := b.HW
	if req.Isolation == IsolationLogEnd {
		limit = max(b.HW, b.Durable)
	}
	switch {
	case req.OffsetsOnly:
		return FetchPlan{Limit: limit}
	case req.Offset >= limit:
		return FetchPlan{Limit: limit, NothingYet: true}
	}
	maxBytes := int(req.MaxBytes)
	if maxBytes == 0 || maxBytes > maxFetchBytes {
		maxBytes = maxFetchBytes
	}
	return FetchPlan{Read: true, Limit: limit, MaxBytes: maxBytes}
}

// FetchReady says whether a fetch's answer goes out now: it must (its
// wait is over, or it asked not to wait), it carries min bytes (at least
// one), or there is no waiting for it (an error, offsets only).
func FetchReady(req *messages.FetchRequest, plan FetchPlan, size int, must bool) bool {
	switch {
	case must || plan.Code != messages.ErrorCode_NONE:
		return true
	case plan.NothingYet:
		return false
	case !plan.Read:
		return true
	}
	return size >= max(int(req.MinBytes), 1)
}

// FollowerFetchWaits says whether a follower's fetch is parked rather than
// answered: it found nothing to copy, without an error, and may wait.
func FollowerFetchWaits(batches int, code messages.ErrorCode, maxWaitMs int32) bool {
	return batches == 0 && code == messages.ErrorCode_NONE && maxWaitMs > 0
}

// FollowerFetchNews says whether a parked follower fetch (from
// fetchOffset, parked while the HW was parkedHW) has news now: batches
// written past its offset (the log ends at end), or a newer HW for the
// follower to learn.
func FollowerFetchNews(fetchOffset, parkedHW, end, hw int64) bool {
	return end > fetchOffset || hw > parkedHW
}
