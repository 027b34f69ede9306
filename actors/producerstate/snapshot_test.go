package producerstate

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A state restored from its encoded snapshot answers every check as the
// state it was taken from, and snapshots equal again.
func TestSnapshotRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	s := NewState(Config{})
	base := time.UnixMilli(1_700_000_000_000)
	seqs := map[int64]int32{}
	offset := int64(0)
	for i := range 400 {
		id := int64(rng.IntN(30))
		n := int32(1 + rng.IntN(5))
		b := Batch{ProducerID: id, Epoch: int16(id % 3), BaseSequence: seqs[id], RecordCount: n, MaxTimestamp: base.UnixMilli() + int64(i)}
		s.Appended(b, offset, base.Add(time.Duration(i)*time.Millisecond))
		seqs[id] += n
		offset += int64(n)
	}
	at, snaps, err := DecodeSnapshot(EncodeSnapshot(offset, s.Snapshot()))
	if err != nil || at != offset {
		t.Fatalf("decode: offset %d, %v", at, err)
	}
	r := NewState(Config{})
	r.Restore(snaps)
	a, b := s.Snapshot(), r.Snapshot()
	if len(a) != len(b) {
		t.Fatalf("%d producers restored, want %d", len(b), len(a))
	}
	for i := range a {
		if a[i].ProducerID != b[i].ProducerID || a[i].Epoch != b[i].Epoch || !a[i].LastUpdate.Equal(b[i].LastUpdate) || len(a[i].Batches) != len(b[i].Batches) {
			t.Fatalf("producer %d: restored %+v, want %+v", i, b[i], a[i])
		}
		for j := range a[i].Batches {
			if a[i].Batches[j] != b[i].Batches[j] {
				t.Fatalf("producer %d batch %d: restored %+v, want %+v", i, j, b[i].Batches[j], a[i].Batches[j])
			}
		}
	}
	now := base.Add(time.Second)
	for id := range int64(32) {
		for _, seq := range []int32{0, seqs[id], seqs[id] - 1, seqs[id] + 1} {
			batch := Batch{ProducerID: id, Epoch: int16(id % 3), BaseSequence: max(seq, 0), RecordCount: 1}
			if d1, d2 := s.Check(batch, now), r.Check(batch, now); d1 != d2 {
				t.Fatalf("check %+v: restored %+v, original %+v", batch, d2, d1)
			}
		}
	}
}

// FuzzDecodeSnapshot: arbitrary bytes never panic, and what decodes can be
// restored.
func FuzzDecodeSnapshot(f *testing.F) {
	s := NewState(Config{})
	s.Appended(Batch{ProducerID: 1, Epoch: 0, BaseSequence: 0, RecordCount: 2}, 0, time.UnixMilli(5))
	f.Add(EncodeSnapshot(2, s.Snapshot()))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, snaps, err := DecodeSnapshot(data); err == nil {
			NewState(Config{}).Restore(snaps)
		}
	})
}
