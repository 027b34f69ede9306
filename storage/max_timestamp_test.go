package storage

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluicemq/sluice/messages/record"
)

// stampedBatch builds a batch at base whose records carry timestamps ts.
func stampedBatch(base int64, ts ...int64) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	for i, t := range ts {
		b.Append(t, nil, []byte(fmt.Sprint("v", base+int64(i))), nil)
	}
	out := append([]byte(nil), b.Finish()...)
	record.SetBaseOffset(out, base)
	return out
}

// claimMax rewrites a batch's max timestamp (and its CRC), as a client
// whose header disagrees with its records would send it.
func claimMax(b []byte, ts int64) {
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint32(b[17:], record.ComputeCRC(b))
}

// maxTimestampModel reads every record below below.
func maxTimestampModel(batches [][]byte, below int64) (offset, ts int64, ok bool) {
	for _, b := range batches {
		h, _ := record.ParseHeader(b)
		it := record.Records(b)
		for {
			r, more, err := it.Next()
			if err != nil || !more {
				break
			}
			o, t := h.BaseOffset+int64(r.OffsetDelta), h.BaseTimestamp+r.TimestampDelta
			if o < below && (!ok || t > ts) {
				offset, ts, ok = o, t, true
			}
		}
	}
	return offset, ts, ok
}

// MaxTimestamp agrees with reading every record, on both logs, for logs of
// random timestamps (ties, timestamps going back, headers claiming more
// than their records carry) and every bound around the log.
func TestMaxTimestampMatchesEveryRecord(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		w := openWAL(t, t.TempDir(), 4<<10)
		m := NewMemLog()
		var all [][]byte
		next := int64(0)
		for range 1 + rng.IntN(30) {
			ts := make([]int64, 1+rng.IntN(5))
			for i := range ts {
				ts[i] = 1000 + rng.Int64N(40) // few values: ties are common
			}
			b := stampedBatch(next, ts...)
			if rng.IntN(6) == 0 {
				claimMax(b, 1040+rng.Int64N(20)) // more than any record carries
			}
			must(t, w.Append(b))
			must(t, m.Append(b))
			all = append(all, b)
			next += int64(len(ts))
		}
		start := int64(0)
		if rng.IntN(3) == 0 {
			must(t, w.DeleteBefore(rng.Int64N(next)))
			start = w.LogStartOffset() // the WAL deletes whole segments
			must(t, m.DeleteBefore(start))
		}
		var kept [][]byte
		for _, b := range all {
			if h, _ := record.ParseHeader(b); h.LastOffset() >= start {
				kept = append(kept, b)
			}
		}
		for below := start - 1; below <= next+1; below++ {
			wo, wt, wok := maxTimestampModel(kept, below)
			for name, l := range map[string]Log{"wal": w, "mem": m} {
				o, ts, ok, err := l.MaxTimestamp(below)
				if err != nil || ok != wok || ok && (o != wo || ts != wt) {
					t.Fatalf("seed %d %s (start %d): MaxTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", seed, name, start, below, o, ts, ok, err, wo, wt, wok)
				}
			}
		}
		must(t, w.Close())
	}
}

// The usual case reads one batch: the first with the largest claim.
func TestMaxTimestampReadsOneBatch(t *testing.T) {
	var x index
	batches := [][]byte{stampedBatch(0, 5, 9), stampedBatch(2, 20, 3), stampedBatch(4, 20, 1), stampedBatch(6, 7)}
	for _, b := range batches {
		h, _ := record.ParseHeader(b)
		x.push(h)
	}
	reads := 0
	o, ts, ok, err := x.maxTimestamp(100, func(i int) ([]byte, error) { reads++; return batches[i], nil })
	if err != nil || !ok || o != 2 || ts != 20 {
		t.Fatalf("got %d, %d, %v, %v; want offset 2, timestamp 20", o, ts, ok, err)
	}
	if reads != 1 {
		t.Fatalf("read %d batches, want 1", reads)
	}
	// Below offset 3 the batch at 2 counts only its first record.
	if o, ts, _, _ := x.maxTimestamp(3, func(i int) ([]byte, error) { return batches[i], nil }); o != 2 || ts != 20 {
		t.Fatalf("below 3: %d, %d", o, ts)
	}
	if o, ts, _, _ := x.maxTimestamp(2, func(i int) ([]byte, error) { return batches[i], nil }); o != 1 || ts != 9 {
		t.Fatalf("below 2: %d, %d; want offset 1, timestamp 9", o, ts)
	}
	if _, _, ok, _ := x.maxTimestamp(0, nil); ok {
		t.Fatal("below 0: found a record")
	}
}
