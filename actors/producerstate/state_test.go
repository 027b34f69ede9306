package producerstate

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func batch(pid int64, epoch int16, seq, count int32) Batch {
	return Batch{ProducerID: pid, Epoch: epoch, BaseSequence: seq, RecordCount: count, MaxTimestamp: int64(seq) * 10}
}

// appendAll checks and appends bs one after the other from offset off and
// returns the offset after them; every batch must be an Append.
func appendAll(t *testing.T, s *State, off int64, now time.Time, bs ...Batch) int64 {
	t.Helper()
	for _, b := range bs {
		if d := s.Check(b, now); d.Outcome != Append {
			t.Fatalf("Check(%+v) = %v (%s), want append", b, d.Outcome, d.Reason)
		}
		s.Appended(b, off, now)
		off += int64(b.RecordCount)
	}
	return off
}

func wantOutcome(t *testing.T, s interface {
	Check(Batch, time.Time) Decision
}, b Batch, now time.Time, want Outcome) Decision {
	t.Helper()
	d := s.Check(b, now)
	if d.Outcome != want {
		t.Fatalf("Check(%+v) = %v (%s), want %v", b, d.Outcome, d.Reason, want)
	}
	return d
}

func TestInOrderBatchesAppendAndGapsAreRejected(t *testing.T) {
	s := NewState(Config{})
	appendAll(t, s, 0, t0, batch(7, 0, 0, 3), batch(7, 0, 3, 1), batch(7, 0, 4, 2))
	d := wantOutcome(t, s, batch(7, 0, 7, 1), t0, OutOfOrderSequence) // gap: 6 missing
	if d.Epoch != 0 || d.LastSequence != 5 || !strings.Contains(d.Reason, "expected sequence 6") {
		t.Fatalf("decision %+v", d)
	}
	wantOutcome(t, s, batch(7, 0, 6, 4), t0, Append)
	wantOutcome(t, s, batch(7, 0, 5, 1), t0, OutOfOrderSequence) // overlaps the last batch, does not match it
	wantOutcome(t, s, batch(7, 0, 4, 1), t0, OutOfOrderSequence) // first sequence of a batch, other last sequence
	wantOutcome(t, s, batch(7, 0, 0, 0), t0, InvalidBatch)
}

func TestDuplicatesAreAnsweredWithTheOriginalOffsets(t *testing.T) {
	s := NewState(Config{})
	var bs []Batch
	var firsts []int64
	off := int64(100)
	for i := range int32(5) {
		b := batch(1, 2, i*2, 2)
		bs = append(bs, b)
		firsts = append(firsts, off)
		// Another producer's batch between each, so that offsets are not
		// consecutive per producer.
		off = appendAll(t, s, off, t0, b, batch(9, 0, i, 1))
	}
	for i, b := range bs {
		d := wantOutcome(t, s, b, t0, Duplicate)
		if d.FirstOffset != firsts[i] || d.LastOffset != firsts[i]+1 || d.MaxTimestamp != b.MaxTimestamp {
			t.Fatalf("retry of batch %d: %+v, want offsets %d..%d", i, d, firsts[i], firsts[i]+1)
		}
	}
	// A sixth batch pushes the first out of the window: its retry can no
	// longer be told from a reordering.
	appendAll(t, s, off, t0, batch(1, 2, 10, 2))
	wantOutcome(t, s, bs[0], t0, OutOfOrderSequence)
	wantOutcome(t, s, bs[1], t0, Duplicate)
}

func TestUnknownProducerAcceptsAnySequence(t *testing.T) {
	s := NewState(Config{})
	d := wantOutcome(t, s, batch(3, 5, 42, 2), t0, Append)
	if !d.NewProducer || d.Epoch != -1 || d.LastSequence != -1 {
		t.Fatalf("decision %+v", d)
	}
	s.Appended(batch(3, 5, 42, 2), 0, t0)
	if d := wantOutcome(t, s, batch(3, 5, 44, 1), t0, Append); d.NewProducer || d.Epoch != 5 || d.LastSequence != 43 {
		t.Fatalf("decision %+v", d)
	}
	wantOutcome(t, s, batch(3, 5, 50, 1), t0, OutOfOrderSequence)
	wantOutcome(t, s, batch(3, 5, 0, 1), t0, OutOfOrderSequence)
}

func TestEpochBumpAndFencing(t *testing.T) {
	s := NewState(Config{})
	old := batch(4, 1, 0, 3)
	off := appendAll(t, s, 0, t0, old, batch(4, 1, 3, 3))
	wantOutcome(t, s, batch(4, 0, 6, 1), t0, ProducerFenced)
	wantOutcome(t, s, batch(4, 0, 0, 3), t0, ProducerFenced)
	if d := wantOutcome(t, s, batch(4, 2, 6, 1), t0, OutOfOrderSequence); !strings.Contains(d.Reason, "must start at sequence 0") {
		t.Fatalf("reason %q", d.Reason)
	}
	wantOutcome(t, s, batch(4, 2, 0, 2), t0, Append)
	wantOutcome(t, s, batch(4, 7, 0, 2), t0, Append) // epochs may skip
	appendAll(t, s, off, t0, batch(4, 2, 0, 2))
	// The old epoch's window is gone: its batches are fenced, not duplicates.
	wantOutcome(t, s, old, t0, ProducerFenced)
	wantOutcome(t, s, batch(4, 2, 0, 2), t0, Duplicate)
	wantOutcome(t, s, batch(4, 2, 2, 1), t0, Append)
	if snap := s.Snapshot(); len(snap) != 1 || snap[0].Epoch != 2 || len(snap[0].Batches) != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
}

func TestSequenceWrapsAfterMaxInt32(t *testing.T) {
	s := NewState(Config{})
	a := batch(1, 0, math.MaxInt32-1, 3) // MaxInt32-1, MaxInt32, 0
	if a.LastSequence() != 0 {
		t.Fatalf("last sequence %d", a.LastSequence())
	}
	off := appendAll(t, s, 0, t0, a, batch(1, 0, 1, 1))
	wantOutcome(t, s, a, t0, Duplicate)
	wantOutcome(t, s, batch(1, 0, 2, 5), t0, Append)
	wantOutcome(t, s, batch(1, 0, 3, 1), t0, OutOfOrderSequence)

	b := batch(2, 0, math.MaxInt32-2, 3) // ends exactly at MaxInt32
	off = appendAll(t, s, off, t0, b)
	wantOutcome(t, s, batch(2, 0, 0, 1), t0, Append)
	wantOutcome(t, s, batch(2, 0, math.MaxInt32, 1), t0, OutOfOrderSequence)
	appendAll(t, s, off, t0, batch(2, 0, 0, 1))
	wantOutcome(t, s, b, t0, Duplicate)
}

func TestNonIdempotentBatchesAlwaysAppendAndTouchNoState(t *testing.T) {
	s := NewState(Config{})
	appendAll(t, s, 0, t0, batch(1, 0, 0, 1))
	before := s.Snapshot()
	for i := range 3 {
		b := Batch{ProducerID: -1, Epoch: -1, BaseSequence: -1, RecordCount: 4}
		if d := s.Check(b, t0); d.Outcome != Append || d.NewProducer {
			t.Fatalf("decision %+v", d)
		}
		s.Appended(b, int64(10+i), t0)
		s.Replay(b, int64(10+i), t0)
	}
	if after := s.Snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("non-idempotent batches changed the state: %+v -> %+v", before, after)
	}
}

func TestInvalidIdempotentBatches(t *testing.T) {
	s := NewState(Config{})
	for _, b := range []Batch{batch(1, -1, 0, 1), batch(1, 0, -1, 1), batch(1, 0, 0, 0), batch(1, 0, 0, -3)} {
		if d := wantOutcome(t, s, b, t0, InvalidBatch); d.Reason == "" {
			t.Fatalf("no reason for %+v", b)
		}
		s.Appended(b, 0, t0) // ignored
	}
	if s.Len() != 0 {
		t.Fatalf("invalid batches recorded: %+v", s.Snapshot())
	}
}

func TestCheckDoesNotChangeState(t *testing.T) {
	s := NewState(Config{})
	appendAll(t, s, 0, t0, batch(1, 3, 0, 2), batch(2, 0, 0, 1))
	before := s.Snapshot()
	later := t0.Add(30 * 24 * time.Hour) // expired for Check, not removed
	for _, b := range []Batch{batch(1, 3, 2, 1), batch(1, 3, 0, 2), batch(1, 4, 0, 1), batch(1, 2, 0, 1), batch(5, 0, 9, 1)} {
		s.Check(b, t0)
		s.Check(b, later)
		s.Begin().Check(b, t0)
	}
	if after := s.Snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("Check changed the state: %+v -> %+v", before, after)
	}
}

// The group-commit case: the partition actor validates a queue of produce
// requests and writes the accepted ones with one append.
func TestPendingChecksLaterBatchesAgainstEarlierOnesOfTheSameGroup(t *testing.T) {
	s := NewState(Config{})
	leo := appendAll(t, s, 0, t0, batch(1, 0, 0, 2)) // producer 1 is at sequence 1
	before := s.Snapshot()

	b1, b2 := batch(1, 0, 2, 3), batch(1, 0, 5, 1)
	pend := s.Begin()
	wantOutcome(t, pend, b1, t0, Append)
	pend.Appended(b1, leo, t0)
	b1Offset := leo
	leo += 3
	// Against the committed state b2 leaves a gap; in the group it follows b1.
	wantOutcome(t, s, b2, t0, OutOfOrderSequence)
	wantOutcome(t, pend, b2, t0, Append)
	pend.Appended(b2, leo, t0)
	leo++
	// A retry of b1 queued in the same group is a duplicate of it.
	if d := wantOutcome(t, pend, b1, t0, Duplicate); d.FirstOffset != b1Offset || d.LastOffset != b1Offset+2 {
		t.Fatalf("retry of b1: %+v", d)
	}
	// A new producer's first two batches in one group.
	n1, n2 := batch(8, 0, 0, 1), batch(8, 0, 1, 1)
	wantOutcome(t, pend, n1, t0, Append)
	pend.Appended(n1, leo, t0)
	leo++
	if d := wantOutcome(t, pend, n2, t0, Append); d.NewProducer {
		t.Fatalf("second batch of producer 8 counted as new: %+v", d)
	}
	pend.Appended(n2, leo, t0)
	leo++
	wantOutcome(t, pend, batch(8, 0, 5, 1), t0, OutOfOrderSequence)
	if pend.Len() != 4 {
		t.Fatalf("pending holds %d batches", pend.Len())
	}

	// Nothing reaches the State before Commit.
	if after := s.Snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("pending view changed the state: %+v", after)
	}
	pend.Commit()

	// The result is what appending them one by one gives.
	want := NewState(Config{})
	appendAll(t, want, 0, t0, batch(1, 0, 0, 2), b1, b2, n1, n2)
	if got, exp := s.Snapshot(), want.Snapshot(); !reflect.DeepEqual(got, exp) {
		t.Fatalf("committed state\n%+v\nwant\n%+v", got, exp)
	}
	wantOutcome(t, s, batch(1, 0, 6, 1), t0, Append)
	wantOutcome(t, s, b1, t0, Duplicate)
}

func TestPendingThatIsNotCommittedChangesNothing(t *testing.T) {
	s := NewState(Config{})
	appendAll(t, s, 0, t0, batch(1, 0, 0, 1))
	before := s.Snapshot()
	pend := s.Begin()
	pend.Appended(batch(1, 0, 1, 1), 1, t0)
	pend.Appended(batch(2, 0, 0, 1), 2, t0)
	// The write failed: pend is dropped.
	if after := s.Snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("state changed: %+v", after)
	}
	wantOutcome(t, s, batch(1, 0, 1, 1), t0, Append)
	// And a new group can start over.
	pend = s.Begin()
	wantOutcome(t, pend, batch(1, 0, 1, 1), t0, Append)
}

func TestPendingPanicsOnMisuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s did not panic", name)
			}
		}()
		f()
	}
	s := NewState(Config{})
	pend := s.Begin()
	s.Appended(batch(1, 0, 0, 1), 0, t0)
	mustPanic("Check after the State changed", func() { pend.Check(batch(1, 0, 1, 1), t0) })
	mustPanic("Commit after the State changed", pend.Commit)

	pend = s.Begin()
	s.Reset()
	mustPanic("Commit after Reset", pend.Commit)

	pend = s.Begin()
	pend.Commit()
	mustPanic("Commit twice", pend.Commit)
	mustPanic("Appended after Commit", func() { pend.Appended(batch(1, 0, 0, 1), 0, t0) })
}

func TestExpiry(t *testing.T) {
	const exp = time.Hour
	s := NewState(Config{ProducerIDExpiration: exp})
	appendAll(t, s, 0, t0, batch(1, 0, 0, 1))
	appendAll(t, s, 1, t0.Add(30*time.Minute), batch(2, 0, 0, 1))

	almost := t0.Add(exp - time.Nanosecond)
	wantOutcome(t, s, batch(1, 0, 0, 1), almost, Duplicate)
	if n := s.Expire(almost); n != 0 || s.Len() != 2 {
		t.Fatalf("Expire before the deadline dropped %d", n)
	}
	// At the deadline Check already answers as if Expire had run.
	at := t0.Add(exp)
	if d := wantOutcome(t, s, batch(1, 0, 0, 1), at, Append); !d.NewProducer {
		t.Fatalf("expired producer not new: %+v", d)
	}
	wantOutcome(t, s, batch(1, 0, 9, 1), at, Append)
	wantOutcome(t, s, batch(1, 0, 9, 1), t0.Add(exp-time.Second), OutOfOrderSequence)
	if n := s.Expire(at); n != 1 || s.Len() != 1 || s.Snapshot()[0].ProducerID != 2 {
		t.Fatalf("Expire dropped %d, left %+v", n, s.Snapshot())
	}

	// Appending to a producer that expired but was not yet removed starts
	// it afresh, as if Expire had run.
	late := t0.Add(30*time.Minute + exp)
	s.Appended(batch(2, 4, 77, 1), 2, late)
	snap := s.Snapshot()
	if len(snap) != 1 || snap[0].Epoch != 4 || len(snap[0].Batches) != 1 || snap[0].Batches[0].FirstSequence != 77 || !snap[0].LastUpdate.Equal(late) {
		t.Fatalf("snapshot %+v", snap)
	}

	// Activity keeps a producer alive.
	s = NewState(Config{ProducerIDExpiration: exp})
	now := t0
	off := int64(0)
	for i := range int32(10) {
		off = appendAll(t, s, off, now, batch(1, 0, i, 1))
		now = now.Add(exp / 2)
	}
	if s.Expire(now.Add(-time.Nanosecond)) != 0 {
		t.Fatal("an active producer expired")
	}
}

func TestExpiryDefaultsAndDisabled(t *testing.T) {
	s := NewState(Config{})
	appendAll(t, s, 0, t0, batch(1, 0, 0, 1))
	if s.Expire(t0.Add(DefaultProducerIDExpiration-time.Second)) != 0 {
		t.Fatal("expired before 7 days")
	}
	if s.Expire(t0.Add(DefaultProducerIDExpiration)) != 1 {
		t.Fatal("not expired after 7 days")
	}
	s = NewState(Config{ProducerIDExpiration: -1})
	appendAll(t, s, 0, t0, batch(1, 0, 0, 1))
	far := t0.Add(100 * 365 * 24 * time.Hour)
	wantOutcome(t, s, batch(1, 0, 0, 1), far, Duplicate)
	if s.Expire(far) != 0 {
		t.Fatal("expired with expiration disabled")
	}
}

func TestCapDropsTheLeastRecentlyUpdatedProducer(t *testing.T) {
	s := NewState(Config{MaxProducerIDs: 3})
	off := appendAll(t, s, 0, t0, batch(1, 0, 0, 1), batch(2, 0, 0, 1), batch(3, 0, 0, 1))
	// Producer 1 writes again: 2 is now the least recently updated. A Check
	// is not an update.
	off = appendAll(t, s, off, t0, batch(1, 0, 1, 1))
	s.Check(batch(2, 0, 1, 1), t0)
	off = appendAll(t, s, off, t0, batch(4, 0, 0, 1))
	if got := ids(s); !reflect.DeepEqual(got, []int64{1, 3, 4}) {
		t.Fatalf("tracked %v, want [1 3 4]", got)
	}
	// Producer 2 lost its state: its next batch is accepted unchecked.
	if d := wantOutcome(t, s, batch(2, 0, 5, 1), t0, Append); !d.NewProducer {
		t.Fatalf("evicted producer not new: %+v", d)
	}
	appendAll(t, s, off, t0, batch(2, 0, 5, 1))
	if got := ids(s); !reflect.DeepEqual(got, []int64{1, 2, 4}) {
		t.Fatalf("tracked %v, want [1 2 4]", got)
	}
	if s.Len() != 3 {
		t.Fatalf("Len %d", s.Len())
	}

	// Default and disabled caps.
	s = NewState(Config{})
	for i := range int64(DefaultMaxProducerIDs + 5) {
		s.Appended(batch(i, 0, 0, 1), i, t0)
	}
	if s.Len() != DefaultMaxProducerIDs || s.Snapshot()[0].ProducerID != 5 {
		t.Fatalf("default cap: %d tracked", s.Len())
	}
	s = NewState(Config{MaxProducerIDs: -1})
	for i := range int64(DefaultMaxProducerIDs + 5) {
		s.Appended(batch(i, 0, 0, 1), i, t0)
	}
	if s.Len() != DefaultMaxProducerIDs+5 {
		t.Fatalf("no cap: %d tracked", s.Len())
	}
}

func ids(s *State) []int64 {
	var out []int64
	for _, p := range s.Snapshot() {
		out = append(out, p.ProducerID)
	}
	return out
}

func TestTruncateTo(t *testing.T) {
	s := NewState(Config{})
	// Offsets: p1 0-1, p2 2, p1 3-4, p2 5-7, p1 8.
	appendAll(t, s, 0, t0, batch(1, 0, 0, 2), batch(2, 3, 0, 1), batch(1, 0, 2, 2), batch(2, 3, 1, 3), batch(1, 0, 4, 1))
	s.TruncateTo(4) // removes p1's 3-4 (straddles 4), p2's 5-7 and p1's 8
	snap := s.Snapshot()
	if len(snap) != 2 || len(snap[0].Batches) != 1 || snap[0].Batches[0].LastOffset != 1 || len(snap[1].Batches) != 1 || snap[1].Batches[0].FirstOffset != 2 {
		t.Fatalf("after TruncateTo(4): %+v", snap)
	}
	// The producers continue from what is left of the log.
	wantOutcome(t, s, batch(1, 0, 2, 2), t0, Append)
	wantOutcome(t, s, batch(2, 3, 1, 3), t0, Append)
	wantOutcome(t, s, batch(1, 0, 0, 2), t0, Duplicate)

	// A producer left with nothing is forgotten.
	s.TruncateTo(2)
	if got := ids(s); !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("after TruncateTo(2): %v", got)
	}
	if d := wantOutcome(t, s, batch(2, 3, 1, 1), t0, Append); !d.NewProducer {
		t.Fatalf("%+v", d)
	}
	s.TruncateTo(0)
	if s.Len() != 0 {
		t.Fatalf("after TruncateTo(0): %+v", s.Snapshot())
	}
}

// TruncateTo keeps only what is true of the log: whatever a rebuild of the
// truncated log answers Duplicate, TruncateTo answers Duplicate or
// OutOfOrderSequence (never a wrong offset), and an Append of the rebuild is
// an Append.
func TestTruncateToAgreesWithARebuildWhereItKnows(t *testing.T) {
	type entry struct {
		b   Batch
		off int64
	}
	s := NewState(Config{})
	var log []entry
	off := int64(0)
	for i := range int32(8) {
		for _, b := range []Batch{batch(1, 0, i, 1), batch(2, 0, 2*i, 2)} {
			s.Appended(b, off, t0)
			log = append(log, entry{b, off})
			off += int64(b.RecordCount)
		}
	}
	const cut = 15 // a batch boundary: the log truncates whole batches
	s.TruncateTo(cut)
	rebuilt := NewState(Config{})
	for _, e := range log {
		if e.off < cut {
			rebuilt.Replay(e.b, e.off, t0)
		}
	}
	for _, e := range log {
		for _, b := range []Batch{e.b, batch(e.b.ProducerID, 0, e.b.BaseSequence+1, 1), batch(e.b.ProducerID, 1, 0, 1)} {
			got, want := s.Check(b, t0), rebuilt.Check(b, t0)
			switch {
			case want.Outcome == Duplicate && (got.Outcome == Duplicate && got != want || got.Outcome != Duplicate && got.Outcome != OutOfOrderSequence):
				t.Fatalf("%+v: truncated %+v, rebuilt %+v", b, got, want)
			case want.Outcome != Duplicate && got.Outcome != want.Outcome:
				t.Fatalf("%+v: truncated %+v, rebuilt %+v", b, got, want)
			}
		}
	}
}

func TestResetAndReplayRebuildTheState(t *testing.T) {
	s := NewState(Config{})
	type entry struct {
		b   Batch
		off int64
	}
	var log []entry
	off := int64(0)
	for _, b := range []Batch{batch(1, 0, 0, 2), batch(2, 0, 5, 1), batch(1, 0, 2, 2), batch(1, 1, 0, 1), batch(2, 0, 6, 1)} {
		log = append(log, entry{b, off})
		off = appendAll(t, s, off, t0, b)
	}
	want := s.Snapshot()
	s.Reset()
	if s.Len() != 0 {
		t.Fatal("Reset left state")
	}
	for _, e := range log {
		s.Replay(e.b, e.off, t0)
	}
	if got := s.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt\n%+v\nwant\n%+v", got, want)
	}
}

// Replay trusts the log: a lower epoch after a higher one (possible after an
// unclean election) is taken as the current epoch.
func TestReplayTrustsTheLog(t *testing.T) {
	s := NewState(Config{})
	s.Replay(batch(1, 5, 0, 1), 0, t0)
	s.Replay(batch(1, 3, 7, 1), 1, t0)
	s.Replay(batch(1, 3, 20, 1), 2, t0) // a gap
	snap := s.Snapshot()
	if len(snap) != 1 || snap[0].Epoch != 3 || len(snap[0].Batches) != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	wantOutcome(t, s, batch(1, 3, 21, 1), t0, Append)
	// Replay times that go backwards do not move LastUpdate back.
	s.Replay(batch(1, 3, 21, 1), 3, t0.Add(-time.Hour))
	if !s.Snapshot()[0].LastUpdate.Equal(t0) {
		t.Fatalf("LastUpdate %v", s.Snapshot()[0].LastUpdate)
	}
}

func TestZeroValueStateUsesDefaults(t *testing.T) {
	var s State
	wantOutcome(t, &s, batch(1, 0, 3, 1), t0, Append)
	appendAll(t, &s, 0, t0, batch(1, 0, 3, 1))
	wantOutcome(t, &s, batch(1, 0, 3, 1), t0.Add(DefaultProducerIDExpiration-time.Second), Duplicate)
	wantOutcome(t, &s, batch(1, 0, 3, 1), t0.Add(DefaultProducerIDExpiration), Append)
	s.Reset()
	s.TruncateTo(0)
	if s.Expire(t0) != 0 || s.Len() != 0 || len(s.Snapshot()) != 0 {
		t.Fatal("empty state not empty")
	}
}

func TestWindowHoldsAtMostFiveBatches(t *testing.T) {
	s := NewState(Config{})
	off := int64(0)
	for i := range int32(12) {
		off = appendAll(t, s, off, t0, batch(1, 0, i, 1))
		if n := len(s.Snapshot()[0].Batches); n != min(int(i)+1, WindowSize) {
			t.Fatalf("after %d batches the window holds %d", i+1, n)
		}
	}
	got := s.Snapshot()[0].Batches
	for i, m := range got {
		if m.FirstSequence != int32(7+i) || m.FirstOffset != int64(7+i) {
			t.Fatalf("window %+v", got)
		}
	}
}

func TestOutcomeStrings(t *testing.T) {
	for o, want := range map[Outcome]string{Append: "append", Duplicate: "duplicate", OutOfOrderSequence: "out of order sequence",
		ProducerFenced: "producer fenced", InvalidBatch: "invalid batch", Outcome(99): "Outcome(99)"} {
		if o.String() != want {
			t.Errorf("%d: %q, want %q", o, o.String(), want)
		}
	}
}
