package storage

import (
	"fmt"
	"testing"

	"github.com/sluicemq/sluice/messages/record"
)

// benchBatches returns n batches of about 64 KiB, each of records records.
func benchBatches(n, records int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = mkBatch(0, spec{records: records, ts: 1000, value: 64<<10/records - 16})
	}
	return out
}

// appendAll appends batches as one Append at the LEO, fixing their offsets.
func appendAll(tb testing.TB, l Log, batches [][]byte) {
	next := l.LogEndOffset()
	for _, b := range batches {
		record.SetBaseOffset(b, next)
		h, _ := record.ParseHeader(b)
		next = h.NextOffset()
	}
	if err := l.Append(batches...); err != nil {
		tb.Fatal(err)
	}
}

// appendRepeatedly appends batches b.N times, emptying the log every so
// often to keep the disk use down, and reports the bytes per append.
func appendRepeatedly(b *testing.B, w *WALLog, batches [][]byte, every int) {
	var size int64
	for _, bb := range batches {
		size += int64(len(bb))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		appendAll(b, w, batches)
		if i%every == every-1 {
			b.StopTimer()
			must(b, w.DeleteBefore(w.LogEndOffset()))
			b.StartTimer()
		}
	}
}

// BenchmarkAppend appends 4 batches of ~64 KiB per call: 1 KiB records, or
// 16 times as many 64-byte records to show that the cost per Append does not
// depend on the record count.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		for _, records := range []int{64, 1024} {
			b.Run(fmt.Sprintf("sync=%v/records=%d", sync, records), func(b *testing.B) {
				w, err := OpenWAL(b.TempDir(), WALOptions{NoSync: !sync}, quietLogger())
				must(b, err)
				defer w.Close()
				batches := benchBatches(4, records)
				appendRepeatedly(b, w, batches, 256)
				b.ReportMetric(float64(b.N*len(batches)*records)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkRead reads 1 MiB per call through a log of 64 MiB: from the
// segment being written (held in memory by wal) and from older 8 MiB
// segments (read back from their files when not in wal's cache).
func BenchmarkRead(b *testing.B) {
	for _, c := range []struct {
		name    string
		segment int
	}{{"tail", 128 << 20}, {"old-segments", 8 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			w, err := OpenWAL(b.TempDir(), WALOptions{SegmentBytes: c.segment, NoSync: true}, quietLogger())
			must(b, err)
			defer w.Close()
			batches := benchBatches(16, 64)
			for range 64 {
				appendAll(b, w, batches)
			}
			if c.segment < 64<<20 {
				// Start past the tail's segment so every read hits old files.
				batches = benchBatches(1, 64)
				appendAll(b, w, batches)
			}
			leo := w.LogEndOffset()
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for range b.N {
				got, err := w.Read(off, 1<<20, leo)
				if err != nil || len(got) == 0 {
					b.Fatal(err)
				}
				last, _ := record.ParseHeader(got[len(got)-1])
				if off = last.NextOffset(); off >= leo-64*64 {
					off = 0
				}
			}
		})
	}
}

// TestAppendAllocs checks that Append allocates nothing per record or per
// call beyond amortised growth of its buffers.
func TestAppendAllocs(t *testing.T) {
	for _, records := range []int{1, 1000} {
		w := openWAL(t, t.TempDir(), 64<<20)
		batches := make([][]byte, 4)
		for i := range batches {
			batches[i] = mkBatch(0, spec{records: records, value: 8})
		}
		appendAll(t, w, batches) // warm up
		if n := testing.AllocsPerRun(200, func() { appendAll(t, w, batches) }); n > 0 {
			t.Errorf("%d records per batch: %v allocations per Append", records, n)
		}
		must(t, w.Close())
	}
}

// BenchmarkWriteThroughSegments writes 1 MiB groups (as a partition's group
// commit does) without fsync through many segments of each size: the cost
// of wal's in-memory copy of the segment being written, which grows with
// the segment.
func BenchmarkWriteThroughSegments(b *testing.B) {
	for _, seg := range []int{1 << 20, 4 << 20, 16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("segment=%dMiB", seg>>20), func(b *testing.B) {
			w, err := OpenWAL(b.TempDir(), WALOptions{SegmentBytes: seg, NoSync: true}, quietLogger())
			must(b, err)
			defer w.Close()
			appendRepeatedly(b, w, benchBatches(16, 64), 1024)
		})
	}
}
