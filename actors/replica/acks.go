package replica

import (
	"time"

	"github.com/sluicemq/sluice/messages"
)

// Written is a produce request whose batch is in the log (or, for a
// retry, already was), waiting to be answered. T is where the answer
// goes: the actor's sender.
type Written[T any] struct {
	To T
	// Resp is the answer, ready to send: success, or the error the request
	// ended with.
	Resp *messages.ProduceResponse
	// Next is the offset after the request's batch: it is durable once the
	// log is synced to Next, replicated once the HW reaches Next.
	Next     int64
	AcksAll  bool
	Deadline time.Time
	// Arrived is when the request reached the replica, for the latency
	// metric.
	Arrived time.Time
}

// Acks holds the written requests of a leader until they may be answered.
// A request is answered with success only once its batch is durable on the
// leader (synced) and, for acks=all, below the high watermark; the HW of a
// leader counts only durable data, so acks=all requests pass the sync
// first and then wait for the HW.
type Acks[T any] struct {
	// unsynced wait for the fsync of their batch, in offset order.
	unsynced []Written[T]
	// replicating are acks=all requests on disk, waiting for the HW.
	replicating []Written[T]
	// durable is the offset below which the log is known to be on disk.
	durable int64
	// hw is the latest high watermark heard.
	hw int64
}

// Durable is the offset below which the log is known to be on disk.
func (a *Acks[T]) Durable() int64 { return a.durable }

// Replicating is how many acks=all requests wait for the HW: while there
// are any, the replica checks their deadlines often.
func (a *Acks[T]) Replicating() int { return len(a.replicating) }

// Waiting is how many requests wait for anything.
func (a *Acks[T]) Waiting() int { return len(a.unsynced) + len(a.replicating) }

// Add takes a written request. A request whose batch is already durable
// (a retry of a batch written earlier) passes on at once, and comes back
// if it may be answered now. Only the new request is looked at: a group
// commit adds many.
func (a *Acks[T]) Add(w Written[T]) []Written[T] {
	switch {
	case w.Next > a.durable:
		a.unsynced = append(a.unsynced, w)
	case !w.AcksAll || w.Next <= a.hw:
		return []Written[T]{w}
	default:
		a.replicating = append(a.replicating, w)
	}
	return nil
}

// Synced records that the log is on disk below offset, and returns the
// requests that may now be answered. Offsets never go back: an older
// sync's report changes nothing.
func (a *Acks[T]) Synced(offset int64) []Written[T] {
	a.durable = max(a.durable, offset)
	var out []Written[T]
	kept := a.unsynced[:0]
	for _, w := range a.unsynced {
		switch {
		case w.Next > a.durable:
			kept = append(kept, w)
		case w.AcksAll:
			a.replicating = append(a.replicating, w)
		default:
			out = append(out, w)
		}
	}
	clear(a.unsynced[len(kept):])
	a.unsynced = kept
	return append(out, a.releaseReplicated()...)
}

// HWAdvanced records the leader's high watermark and returns the acks=all
// requests it now covers.
func (a *Acks[T]) HWAdvanced(hw int64) []Written[T] {
	a.hw = max(a.hw, hw)
	return a.releaseReplicated()
}

// releaseReplicated returns the acks=all requests on disk that the HW
// covers.
func (a *Acks[T]) releaseReplicated() []Written[T] {
	var out []Written[T]
	kept := a.replicating[:0]
	for _, w := range a.replicating {
		if w.Next <= min(a.hw, a.durable) {
			out = append(out, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(a.replicating[len(kept):])
	a.replicating = kept
	return out
}

// Expired returns, with REQUEST_TIMED_OUT, the acks=all requests whose
// deadline is before now. Requests still waiting for their fsync are not
// timed out: the fsync's outcome answers them.
func (a *Acks[T]) Expired(now time.Time) []Written[T] {
	var out []Written[T]
	kept := a.replicating[:0]
	for _, w := range a.replicating {
		if now.After(w.Deadline) {
			out = append(out, failed(w, messages.ErrorCode_REQUEST_TIMED_OUT, "not replicated to the ISR in time"))
		} else {
			kept = append(kept, w)
		}
	}
	clear(a.replicating[len(kept):])
	a.replicating = kept
	return out
}

// SyncFailed returns every request waiting for an fsync, with
// STORAGE_ERROR: whether their batches reached the disk is unknown.
func (a *Acks[T]) SyncFailed(why string) []Written[T] {
	out := make([]Written[T], 0, len(a.unsynced))
	for _, w := range a.unsynced {
		out = append(out, failed(w, messages.ErrorCode_STORAGE_ERROR, why))
	}
	a.unsynced = nil
	return out
}

// Abandon returns every waiting request with code: the replica stops
// leading (or stops), so none of them will be answered otherwise. The
// durable offset stays; the HW is forgotten with the role.
func (a *Acks[T]) Abandon(code messages.ErrorCode, why string) []Written[T] {
	out := make([]Written[T], 0, a.Waiting())
	for _, w := range append(a.unsynced, a.replicating...) {
		out = append(out, failed(w, code, why))
	}
	a.unsynced, a.replicating, a.hw = nil, nil, 0
	return out
}

// Truncated records that the log now ends at leo: what is written from
// there on is durable only once synced again.
func (a *Acks[T]) Truncated(leo int64) { a.durable = min(a.durable, leo) }

// Reset records that the log was started over at offset, and synced.
func (a *Acks[T]) Reset(offset int64) { a.durable = offset }

func failed[T any](w Written[T], code messages.ErrorCode, why string) Written[T] {
	w.Resp.Error, w.Resp.ErrorMessage, w.Resp.BaseOffset = code, why, -1
	return w
}
