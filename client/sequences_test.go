package client

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/messages/record"
)

// testBatch is a sealed batch of n records, never sent.
func testBatch(n int) *sealedBatch {
	var bld record.Builder
	bld.Reset(record.NoProducer)
	b := &sealedBatch{seq: -1, ordinal: -1}
	for i := range n {
		bld.Append(0, nil, []byte(fmt.Sprint(i)), nil)
		b.recs = append(b.recs, pendingRecord{r: &Record{}})
	}
	b.data = slices.Clone(bld.Finish())
	return b
}

// sent numbers n batches of q (records records each) as first sends do.
func sent(q *partitionQueue, n, records int) []*sealedBatch {
	var out []*sealedBatch
	for range n {
		b := testBatch(records)
		q.number(b, 7, 0)
		out = append(out, b)
	}
	return out
}

func header(t *testing.T, b *sealedBatch) record.Header {
	t.Helper()
	h, err := record.Validate(b.data, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Batches put back after a failure go out again in the order they were
// first sent, also when their sequences wrapped past math.MaxInt32 to 0.
func TestRequeueKeepsSendOrderAcrossTheSequenceWrap(t *testing.T) {
	q := newPartitionQueue()
	q.nextSeq = math.MaxInt32 - 1
	bs := sent(q, 3, 1)
	if bs[0].seq != math.MaxInt32-1 || bs[1].seq != math.MaxInt32 || bs[2].seq != 0 {
		t.Fatalf("sequences %d, %d, %d", bs[0].seq, bs[1].seq, bs[2].seq)
	}
	fresh := testBatch(1)
	q.batches = []*sealedBatch{fresh}
	// Answers come back in any order.
	for _, i := range []int{2, 0, 1} {
		q.requeue(bs[i])
	}
	if want := []*sealedBatch{bs[0], bs[1], bs[2], fresh}; !slices.Equal(q.batches, want) {
		t.Fatalf("queue holds sequences %v, want %d, %d, %d, then the never-sent batch",
			seqs(q.batches), bs[0].seq, bs[1].seq, bs[2].seq)
	}
}

func seqs(bs []*sealedBatch) []int32 {
	var out []int32
	for _, b := range bs {
		out = append(out, b.seq)
	}
	return out
}

// After a lost batch the queued ones are renumbered from 0 under the new
// epoch in send order, on copies of their bytes.
func TestRestartRenumbersTheQueueFromZero(t *testing.T) {
	q := newPartitionQueue()
	q.nextSeq = 100
	bs := sent(q, 3, 2)
	fresh := testBatch(1)
	if !q.failed(bs[0]) {
		t.Fatal("a numbered batch failing with nothing acknowledged after it is not lost")
	}
	for _, b := range bs[1:] {
		b.notInLog = true // answered OUT_OF_ORDER_SEQUENCE
		q.requeue(b)
	}
	q.batches = append(q.batches, fresh)
	if !q.hasGap() {
		t.Fatal("no gap after a lost batch whose successors the leader refused")
	}
	old := slices.Clone(bs[1].data)
	shared := bs[1].data
	q.restart(7, 1)
	for i, b := range bs[1:] {
		h := header(t, b)
		if b.seq != int32(2*i) || h.ProducerID != 7 || h.ProducerEpoch != 1 || h.BaseSequence != int32(2*i) || b.notInLog {
			t.Fatalf("batch %d after restart: seq %d, header %+v, notInLog %v", i, b.seq, h, b.notInLog)
		}
	}
	if !slices.Equal(shared, old) {
		t.Fatal("restart rewrote the bytes an earlier request may still be sending")
	}
	if fresh.seq != -1 || q.nextSeq != 4 || q.hasGap() || q.lost != -1 {
		t.Fatalf("after restart: fresh seq %d, next seq %d, gap %v, lost %d", fresh.seq, q.nextSeq, q.hasGap(), q.lost)
	}
	q.number(fresh, 7, 1)
	if fresh.seq != 4 || fresh.ordinal != 3 {
		t.Fatalf("next batch: seq %d ordinal %d, want seq 4 ordinal 3", fresh.seq, fresh.ordinal)
	}
}

// Whether a failure leaves a gap only a new epoch closes.
func TestGapDecisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(q *partitionQueue, bs []*sealedBatch)
		gap  bool
	}{
		{"nothing failed", func(q *partitionQueue, bs []*sealedBatch) {
			q.acked(bs[0])
			q.requeue(bs[1]) // a retriable error: resent in order
		}, false},
		{"lost, nothing left to tell", func(q *partitionQueue, bs []*sealedBatch) {
			q.acked(bs[0])
			q.failed(bs[1])
			q.failed(bs[2])
		}, true},
		{"lost, a later batch acknowledged", func(q *partitionQueue, bs []*sealedBatch) {
			q.failed(bs[0])
			q.acked(bs[1])
			q.acked(bs[2])
		}, false},
		{"lost after a later batch was acknowledged", func(q *partitionQueue, bs []*sealedBatch) {
			q.acked(bs[1])
			q.failed(bs[0])
		}, false},
		{"lost, later ones to resend first", func(q *partitionQueue, bs []*sealedBatch) {
			q.failed(bs[0])
			q.requeue(bs[1]) // maybe written: its answer will tell
		}, false},
		{"oldest unanswered refused as out of order", func(q *partitionQueue, bs []*sealedBatch) {
			q.acked(bs[0])
			bs[1].notInLog = true
			q.requeue(bs[1])
		}, true},
		{"an earlier one to resend before one refused", func(q *partitionQueue, bs []*sealedBatch) {
			q.requeue(bs[0])
			bs[1].notInLog = true
			q.requeue(bs[1])
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newPartitionQueue()
			tc.run(q, sent(q, 3, 1))
			if got := q.hasGap(); got != tc.gap {
				t.Fatalf("gap %v, want %v", got, tc.gap)
			}
		})
	}
	// A batch that was never sent leaves no gap behind.
	q := newPartitionQueue()
	if q.failed(testBatch(1)) || q.hasGap() {
		t.Fatal("a never-sent batch left a gap")
	}
}

// sendFirst takes q's first batch out as trySend does.
func sendFirst(q *partitionQueue) *sealedBatch {
	b := q.batches[0]
	q.batches = q.batches[1:]
	if b.seq < 0 {
		q.number(b, 7, 0)
	}
	q.inflight++
	return b
}

// answered takes b's answer in as onResult does: acknowledged, queued again
// after a retriable error, or failed for good.
func answered(q *partitionQueue, b *sealedBatch, outcome string) {
	q.inflight--
	switch outcome {
	case "acked":
		q.acked(b)
	case "retry":
		q.requeue(b)
		q.draining = true
	case "failed":
		if q.failed(b) {
			q.draining = true
		}
	}
}

func wantStep(t *testing.T, q *partitionQueue, want step) {
	t.Helper()
	if got := q.nextStep(5); got != want {
		t.Fatalf("next step %d, want %d (queue %v, in flight %d, lost %d)", got, want, seqs(q.batches), q.inflight, q.lost)
	}
}

// New batches wait while a lost batch is unresolved; once nothing in flight
// can tell whether it was written, the sequences restart.
func TestNextStepAfterALostBatch(t *testing.T) {
	q := newPartitionQueue()
	for range 4 {
		q.batches = append(q.batches, testBatch(1))
	}
	b0, b1 := sendFirst(q), sendFirst(q)
	answered(q, b0, "retry")
	wantStep(t, q, stepWait) // b1 is in flight
	answered(q, b1, "failed")
	wantStep(t, q, stepSend) // b0 again, first
	sendFirst(q)
	wantStep(t, q, stepWait) // new batches wait for the lost one
	answered(q, b0, "acked")
	wantStep(t, q, stepRestart) // b0 came before b1: nothing tells whether b1 was written
	q.restart(7, 1)
	wantStep(t, q, stepSend)
	if b := sendFirst(q); b.seq != 0 || header(t, b).ProducerEpoch != 1 {
		t.Fatalf("first batch after the restart: seq %d, epoch %d", b.seq, header(t, b).ProducerEpoch)
	}
}

// A later batch acknowledged shows the lost one was written: no restart.
func TestNextStepLostBatchShownWritten(t *testing.T) {
	q := newPartitionQueue()
	for range 4 {
		q.batches = append(q.batches, testBatch(1))
	}
	b0, b1 := sendFirst(q), sendFirst(q)
	answered(q, b0, "failed")
	wantStep(t, q, stepWait)
	answered(q, b1, "acked")
	wantStep(t, q, stepSend)
	if b := sendFirst(q); b.seq != 2 || header(t, b).ProducerEpoch != 0 {
		t.Fatalf("next batch: seq %d epoch %d, want 2 under epoch 0", b.seq, header(t, b).ProducerEpoch)
	}
}

// A never-sent batch goes out only within five of the oldest unanswered one.
func TestNextStepWindow(t *testing.T) {
	q := newPartitionQueue()
	for range 7 {
		q.batches = append(q.batches, testBatch(1))
	}
	var first *sealedBatch
	for i := range 5 {
		wantStep(t, q, stepSend)
		b := sendFirst(q)
		if i == 0 {
			first = b
		}
	}
	q.inflight = 0 // room in flight, but the oldest is still unanswered
	wantStep(t, q, stepWait)
	q.acked(first)
	wantStep(t, q, stepSend)
}
