package record

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type testRecord struct {
	ts      int64
	key     []byte
	value   []byte
	headers []RecordHeader
}

func randomRecords(rng *rand.Rand, n int) []testRecord {
	out := make([]testRecord, n)
	base := int64(1_700_000_000_000)
	for i := range out {
		r := testRecord{ts: base + int64(rng.IntN(5000)) - 1000}
		if rng.IntN(4) != 0 {
			r.key = randBytes(rng, rng.IntN(20))
		}
		if rng.IntN(8) != 0 {
			r.value = randBytes(rng, rng.IntN(300))
		}
		for h := rng.IntN(3); h > 0; h-- {
			hv := randBytes(rng, rng.IntN(10))
			if rng.IntN(4) == 0 {
				hv = nil
			}
			r.headers = append(r.headers, RecordHeader{Key: string(randBytes(rng, rng.IntN(6))), Value: hv})
		}
		out[i] = r
	}
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func build(p Producer, recs []testRecord) []byte {
	var b Builder
	b.Reset(p)
	for _, r := range recs {
		b.Append(r.ts, r.key, r.value, r.headers)
	}
	return append([]byte(nil), b.Finish()...)
}

func TestRoundTripAgainstKafkaLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		recs := randomRecords(rng, 1+rng.IntN(50))
		p := Producer{ID: rng.Int64N(1000), Epoch: int16(rng.IntN(10)), BaseSequence: rng.Int32N(1000)}
		batch := build(p, recs)
		SetBaseOffset(batch, 12345)
		SetLeaderEpoch(batch, 7)

		h, err := Validate(batch, 0)
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		// franz-go's kmsg decodes the same bytes as a Kafka RecordBatch v2.
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(batch); err != nil {
			t.Fatalf("kmsg ReadFrom: %v", err)
		}
		if kb.FirstOffset != 12345 || kb.PartitionLeaderEpoch != 7 || kb.Magic != 2 ||
			kb.NumRecords != int32(len(recs)) || kb.ProducerID != p.ID ||
			kb.ProducerEpoch != p.Epoch || kb.FirstSequence != p.BaseSequence || uint32(kb.CRC) != h.CRC {
			t.Fatalf("kmsg header mismatch: %+v vs %+v", kb, h)
		}
		if got := kb.AppendTo(nil); !bytes.Equal(got, batch) {
			t.Fatalf("kmsg re-encoding differs")
		}
		rest := kb.Records
		it := Records(batch)
		for i, want := range recs {
			var kr kmsg.Record
			if err := kr.ReadFrom(rest); err != nil {
				t.Fatalf("kmsg record %d: %v", i, err)
			}
			rest = rest[len(kr.AppendTo(nil)):]
			r, ok, err := it.Next()
			if err != nil || !ok {
				t.Fatalf("record %d: ok=%v err=%v", i, ok, err)
			}
			if int(r.OffsetDelta) != i || kr.OffsetDelta != int32(i) {
				t.Fatalf("offset delta %d / %d, want %d", r.OffsetDelta, kr.OffsetDelta, i)
			}
			if kb.FirstTimestamp+r.TimestampDelta != want.ts || kr.TimestampDelta64 != r.TimestampDelta {
				t.Fatalf("timestamp mismatch")
			}
			if !sameBytes(r.Key, want.key) || !sameBytes(kr.Key, want.key) ||
				!sameBytes(r.Value, want.value) || !sameBytes(kr.Value, want.value) {
				t.Fatalf("record %d key/value mismatch", i)
			}
			hs, err := r.Headers(nil)
			if err != nil || len(hs) != len(want.headers) || len(kr.Headers) != len(want.headers) {
				t.Fatalf("headers: %v %d %d", err, len(hs), len(want.headers))
			}
			for j := range hs {
				if hs[j].Key != want.headers[j].Key || !sameBytes(hs[j].Value, want.headers[j].Value) ||
					kr.Headers[j].Key != want.headers[j].Key {
					t.Fatalf("header %d mismatch", j)
				}
			}
		}
		if _, ok, err := it.Next(); ok || err != nil {
			t.Fatalf("iterator did not end cleanly: ok=%v err=%v", ok, err)
		}
	}
}

// sameBytes compares with null-ness: nil and empty are different records.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func TestValidateRejectsEveryFlippedBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	batch := build(NoProducer, randomRecords(rng, 5))
	for i := offBatchLength * 8; i < len(batch)*8; i++ {
		if i/8 >= offLeaderEpoch && i/8 < offMagic {
			continue // the leader epoch is outside the CRC by design
		}
		c := append([]byte(nil), batch...)
		c[i/8] ^= 1 << (i % 8)
		if _, err := Validate(c, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit %d flipped: err = %v, want ErrCorrupt", i, err)
		}
	}
}

func TestValidateLimitsAndShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	batch := build(NoProducer, randomRecords(rng, 3))
	if _, err := Validate(batch, len(batch)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over limit: %v", err)
	}
	if _, err := Validate(batch, len(batch)); err != nil {
		t.Fatalf("at limit: %v", err)
	}
	if _, err := Validate(batch[:len(batch)-1], 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := Validate(append(append([]byte(nil), batch...), 0), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	var empty Builder
	empty.Reset(NoProducer)
	if _, err := Validate(empty.Finish(), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty batch: %v", err)
	}
	// A batch that says it is compressed but does not decompress is refused.
	c := append([]byte(nil), batch...)
	c[offAttributes+1] |= 1
	SetProducer(c, NoProducer) // recompute the CRC
	if _, err := Validate(c, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("compressed: %v", err)
	}
}

func TestSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a := build(NoProducer, randomRecords(rng, 2))
	b := build(NoProducer, randomRecords(rng, 4))
	all := append(append([]byte(nil), a...), b...)
	got, err := Split(all, nil)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) {
		t.Fatalf("Split: %v %d", err, len(got))
	}
	if _, err := Split(all[:len(all)-3], nil); err == nil {
		t.Fatal("Split accepted a partial batch")
	}
}

// A reader starting at from receives the records at or after it: a batch
// that starts before from counts only its tail; entries may hold several
// batches; bytes that do not parse are not counted.
func TestRecordsFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a := build(NoProducer, randomRecords(rng, 4)) // offsets 10-13
	SetBaseOffset(a, 10)
	b := build(NoProducer, randomRecords(rng, 3)) // offsets 14-16
	SetBaseOffset(b, 14)
	both := append(append([]byte(nil), a...), b...)
	for _, c := range []struct {
		batches [][]byte
		from    int64
		want    int64
	}{
		{[][]byte{a, b}, 10, 7},
		{[][]byte{a, b}, 12, 5},
		{[][]byte{both}, 0, 7},
		{[][]byte{both}, 15, 2},
		{[][]byte{a}, 14, 0},
		{[][]byte{both[:len(both)-1]}, 0, 4},
		{[][]byte{a[:HeaderSize-1]}, 0, 0},
		{nil, 0, 0},
	} {
		if got := RecordsFrom(c.batches, c.from); got != c.want {
			t.Errorf("from %d over %d entries: %d, want %d", c.from, len(c.batches), got, c.want)
		}
	}
}

func TestRecordSizeMatchesEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var b Builder
	b.Reset(NoProducer)
	for i, r := range randomRecords(rng, 100) {
		before := b.Len()
		var first int64
		if i > 0 {
			first = b.firstTS
		} else {
			first = r.ts
		}
		want := RecordSize(int32(i), r.ts-first, r.key, r.value, r.headers)
		b.Append(r.ts, r.key, r.value, r.headers)
		if got := b.Len() - before; got != want {
			t.Fatalf("record %d: RecordSize %d, encoded %d", i, want, got)
		}
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	var b Builder
	b.Reset(NoProducer)
	key, value := []byte("key"), make([]byte, 1024)
	for i := 0; i < 100; i++ {
		b.Append(1, key, value, nil)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset(NoProducer)
		for i := 0; i < 100; i++ {
			b.Append(1, key, value, nil)
		}
		b.Finish()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
}

func FuzzValidate(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	f.Add(build(NoProducer, randomRecords(rng, 3)))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Validate(b, 1<<20)
		if err != nil {
			return
		}
		// Whatever validates must decode completely.
		it := Records(b)
		n := 0
		for {
			r, ok, err := it.Next()
			if err != nil {
				t.Fatalf("validated batch fails to decode: %v", err)
			}
			if !ok {
				break
			}
			if _, err := r.Headers(nil); err != nil {
				t.Fatalf("validated batch has bad headers: %v", err)
			}
			n++
		}
		if n != int(h.RecordCount) {
			t.Fatalf("count %d vs %d", n, h.RecordCount)
		}
	})
}

func BenchmarkBuild1KiB(b *testing.B) {
	var bl Builder
	key, value := []byte("key-000000"), make([]byte, 1024)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	bl.Reset(NoProducer)
	for i := 0; i < b.N; i++ {
		if bl.Count() == 1000 {
			bl.Finish()
			bl.Reset(NoProducer)
		}
		bl.Append(int64(i), key, value, nil)
	}
}

func BenchmarkValidate1MiB(b *testing.B) {
	var bl Builder
	bl.Reset(NoProducer)
	value := make([]byte, 1024)
	for bl.Len() < 1<<20-2048 {
		bl.Append(1, nil, value, nil)
	}
	batch := bl.Finish()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Validate(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}
