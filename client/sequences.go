package client

import (
	"math"
	"slices"
	"time"

	"github.com/sluicemq/sluice/messages/record"
)

// partitionQueue is the sender's state of one partition: the batches waiting
// to go out and, with idempotence, the partition's sequence numbers.
//
// Idempotence: a batch is numbered when first sent (its base sequence under
// the partition's producer id and epoch, and an ordinal that counts the
// partition's batches in send order) and keeps its number across retries.
// Every numbered batch, queued or in flight, belongs to the partition's
// current epoch.
//
// After a failure nothing goes out until every request in flight has
// answered (draining). Then the queue is resent in order, so that the leader
// sees the sequence without gaps, unless the sequence has a gap this producer
// cannot fill: a numbered batch failed for good (delivery timeout, retries
// used up, a non-retriable error) without a later batch showing it was
// written, or the oldest unanswered batch was answered OUT_OF_ORDER_SEQUENCE.
// Then the partition's sequences restart at 0 under a newer epoch (KIP-360),
// which the leader accepts and which fences the older one.
type partitionQueue struct {
	// batches waiting to be sent: numbered ones in ordinal order, then
	// never-sent ones.
	batches  []*sealedBatch
	inflight int
	// retryAt holds sends back after a retriable error.
	retryAt time.Time
	// draining is set after a failure (idempotence).
	draining bool

	// producerID and epoch are what the partition's sequences belong to; -1
	// until its first batch is numbered.
	producerID int64
	epoch      int16
	nextSeq    int32
	// nextOrdinal numbers batches as first sent; unacked holds the ordinals
	// of batches sent and not yet answered for good. A new batch goes out
	// only within MaxInFlight of the oldest unanswered one: the leader keeps
	// the last 5 batches per producer, and a retry must still find its
	// original there to be recognised as a duplicate.
	nextOrdinal int64
	unacked     []int64
	// maxAcked is the ordinal of the latest batch acknowledged under the
	// current epoch; lost that of the latest numbered batch that failed for
	// good with no later batch acknowledged since (so it may be missing from
	// the log). -1 for none.
	maxAcked, lost int64
}

func newPartitionQueue() *partitionQueue {
	return &partitionQueue{producerID: -1, maxAcked: -1, lost: -1}
}

// windowFull reports whether a never-sent batch must wait for the oldest
// unanswered one.
func (q *partitionQueue) windowFull(limit int) bool {
	return len(q.unacked) > 0 && q.nextOrdinal-q.unacked[0] >= int64(limit)
}

// number gives a never-sent batch its sequence and ordinal; a partition
// numbering its first batch adopts the producer's id and epoch.
func (q *partitionQueue) number(b *sealedBatch, producerID int64, epoch int16) {
	if q.producerID < 0 {
		q.producerID, q.epoch = producerID, epoch
	}
	b.ordinal = q.nextOrdinal
	q.nextOrdinal++
	q.unacked = append(q.unacked, b.ordinal)
	q.stamp(b)
}

// stamp gives b the next sequence and writes its producer fields.
func (q *partitionQueue) stamp(b *sealedBatch) {
	b.seq = q.nextSeq
	q.nextSeq = nextSequence(q.nextSeq, int32(len(b.recs)))
	record.SetProducer(b.data, record.Producer{ID: q.producerID, Epoch: q.epoch, BaseSequence: b.seq})
}

// requeue puts a batch that was sent back in its queue: in ordinal order
// among the other sent ones, ahead of batches never sent. Ordinals, not
// sequences: sequences wrap after math.MaxInt32 and restart at 0 under a
// new epoch.
func (q *partitionQueue) requeue(b *sealedBatch) {
	i := 0
	for i < len(q.batches) && q.batches[i].ordinal >= 0 && q.batches[i].ordinal < b.ordinal {
		i++
	}
	q.batches = slices.Insert(q.batches, i, b)
}

// acked records that the leader has b.
func (q *partitionQueue) acked(b *sealedBatch) {
	q.forget(b.ordinal)
	q.maxAcked = max(q.maxAcked, b.ordinal)
	if b.ordinal > q.lost {
		q.lost = -1 // the sequence continued after the lost batch: it was written
	}
}

// failed records that b will not be sent again. It reports whether b was
// numbered and may be missing from the log, leaving a gap in the sequence.
func (q *partitionQueue) failed(b *sealedBatch) bool {
	q.forget(b.ordinal)
	if b.seq < 0 || b.ordinal < q.maxAcked {
		return false // never sent, or a later batch shows it was written
	}
	q.lost = max(q.lost, b.ordinal)
	return true
}

func (q *partitionQueue) forget(ordinal int64) {
	if i, ok := slices.BinarySearch(q.unacked, ordinal); ok {
		q.unacked = slices.Delete(q.unacked, i, i+1)
	}
}

// oldestNumbered is the queued batch with the lowest ordinal, nil when no
// numbered batch is queued.
func (q *partitionQueue) oldestNumbered() *sealedBatch {
	if len(q.batches) > 0 && q.batches[0].seq >= 0 {
		return q.batches[0]
	}
	return nil
}

// step is what a partition does next (idempotence).
type step int

const (
	stepWait    step = iota // wait for answers
	stepSend                // send the first queued batch
	stepRestart             // restart the sequences under a newer epoch first
)

// nextStep decides what q does next. After a failure (draining), or while a
// lost batch holds never-sent ones back, it waits until nothing is in
// flight, then resends the queue in order or, if the sequence has a gap,
// restarts it. A never-sent batch also waits for room in the window.
func (q *partitionQueue) nextStep(maxInFlight int) step {
	if len(q.batches) == 0 {
		return stepWait
	}
	fresh := q.batches[0].seq < 0
	if q.draining || (fresh && q.lost >= 0) {
		switch {
		case q.inflight > 0:
			return stepWait
		case q.hasGap():
			return stepRestart
		}
		q.draining = false
	}
	if fresh && q.windowFull(maxInFlight) {
		return stepWait
	}
	return stepSend
}

// hasGap reports, once nothing is in flight, whether the partition's
// sequence has a gap resending cannot fill: its oldest unanswered batch was
// answered OUT_OF_ORDER_SEQUENCE (the leader misses something before it), or
// a batch was lost and no numbered batch is left whose answer could show it
// was written. While a batch is lost and others remain, these are resent
// under the current epoch first: a success shows the lost one was written;
// OUT_OF_ORDER_SEQUENCE shows the gap, and that they are not in the log
// (the leader would have answered a retry of a batch it has as a duplicate).
func (q *partitionQueue) hasGap() bool {
	if first := q.oldestNumbered(); first != nil {
		return first.notInLog
	}
	return q.lost >= 0
}

// restart starts the partition's sequences again at 0 under producerID and
// epoch: every queued numbered batch is renumbered in ordinal order. None is
// in the log (hasGap): the first was refused, and a leader appends a
// producer's sequences without gaps, so none after it got in either.
// Nothing may be in flight.
func (q *partitionQueue) restart(producerID int64, epoch int16) {
	q.producerID, q.epoch, q.nextSeq = producerID, epoch, 0
	q.maxAcked, q.lost, q.draining = -1, -1, false
	for _, b := range q.batches {
		if b.seq < 0 {
			break
		}
		// An earlier request may still be waiting in the transport with
		// these bytes: stamp a copy.
		b.data = slices.Clone(b.data)
		b.notInLog = false
		q.stamp(b)
	}
}

// nextSequence is Kafka's sequence increment, wrapping after MaxInt32.
func nextSequence(seq int32, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}
