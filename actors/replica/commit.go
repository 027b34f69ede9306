package replica

import (
	"time"

	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// Outcome is how one produce request of a group commit ends.
type Outcome struct {
	// Base and Next are the offsets of its batch: where it is written now,
	// or, for a retry of a batch already written, where that one was.
	Base, Next int64
	// Appended: the batch is written now. A request with neither Appended
	// nor an error is a duplicate.
	Appended bool
	Code     messages.ErrorCode
	Text     string
}

// Duplicate reports whether the request retried a batch already written.
func (o Outcome) Duplicate() bool { return !o.Appended && o.Code == messages.ErrorCode_NONE }

// Commit decides a group commit of the batches with headers, written from
// leo on: each batch is appended at the next offset, answered as a
// duplicate of a batch already written, or refused (a fenced producer, a
// sequence out of order). Idempotent batches are checked in order, each
// as if the earlier ones of the group were written (a producer's batch 2
// may follow its batch 1 in the same write). The checks go to pending,
// which the caller commits to the producer state once the write succeeded.
func Commit(pending *producerstate.Pending, headers []record.Header, leo int64, now time.Time) []Outcome {
	outcomes := make([]Outcome, len(headers))
	for i, h := range headers {
		b := BatchOf(h)
		d := pending.Check(b, now)
		switch d.Outcome {
		case producerstate.Append:
			pending.Appended(b, leo, now)
			outcomes[i] = Outcome{Base: leo, Next: leo + int64(h.RecordCount), Appended: true}
			leo += int64(h.RecordCount)
		case producerstate.Duplicate:
			outcomes[i] = Outcome{Base: d.FirstOffset, Next: d.LastOffset + 1}
		case producerstate.ProducerFenced:
			outcomes[i] = Outcome{Code: messages.ErrorCode_PRODUCER_FENCED, Text: d.Reason}
		case producerstate.OutOfOrderSequence:
			outcomes[i] = Outcome{Code: messages.ErrorCode_OUT_OF_ORDER_SEQUENCE, Text: d.Reason}
		default:
			outcomes[i] = Outcome{Code: messages.ErrorCode_CORRUPT_RECORD, Text: d.Reason}
		}
	}
	return outcomes
}

// BatchOf is the part of a batch header the idempotence check uses.
func BatchOf(h record.Header) producerstate.Batch {
	return producerstate.Batch{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		RecordCount: h.RecordCount, MaxTimestamp: h.MaxTimestamp}
}
