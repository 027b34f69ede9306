package storage

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages/record"
)

// segLog builds a WAL log of 1 KiB segments with n batches, batch i having
// timestamp 1000+10i, and its model.
func segLog(t *testing.T, n int) (*WALLog, *MemLog) {
	t.Helper()
	w, m := openWAL(t, t.TempDir(), 1024), NewMemLog()
	t.Cleanup(func() { w.Close() })
	for i := range n {
		b := mkBatch(m.LogEndOffset(), spec{records: 1 + i%3, ts: 1000 + 10*int64(i), value: 50})
		must(t, w.Append(b))
		must(t, m.Append(b))
	}
	if len(w.segs) < 5 {
		t.Fatalf("only %d segments", len(w.segs))
	}
	return w, m
}

// segmentOf returns the position of the first batch of the segment holding
// the batch at position i.
func segmentOf(t *testing.T, w *WALLog, i int) int {
	segs, err := listSegments(w.dir)
	must(t, err)
	s, _ := slices.BinarySearch(segs, w.first+uint64(i)+1)
	return int(segs[s-1] - w.first)
}

func TestWALDeleteBeforeIsSegmentGranular(t *testing.T) {
	w, m := segLog(t, 40)
	for off := int64(0); off < m.LogEndOffset(); off += 7 {
		i := m.x.find(off)
		want := m.x.batches[segmentOf(t, w, i)].base
		must(t, w.DeleteBefore(off))
		if w.LogStartOffset() != want {
			t.Fatalf("DeleteBefore(%d): start %d, want %d", off, w.LogStartOffset(), want)
		}
		must(t, m.DeleteBefore(want))
		sameLog(t, w, m)
		checkSegments(t, w)
	}
	leo := w.LogEndOffset()
	must(t, w.DeleteBefore(leo))
	if w.LogStartOffset() != leo || w.LogEndOffset() != leo || w.Size() != 0 || len(w.segs) != 1 {
		t.Fatalf("after deleting everything: [%d, %d) size %d, %d segments", w.LogStartOffset(), w.LogEndOffset(), w.Size(), len(w.segs))
	}
	checkSegments(t, w)
}

func TestWALRetentionBySize(t *testing.T) {
	w, m := segLog(t, 40)
	limit := w.Size() / 2
	start, err := w.ApplyRetention(time.UnixMilli(0), limit, 0, math.MaxInt64)
	must(t, err)
	firstSeg := int64(0) // bytes in the first remaining segment
	for _, b := range w.x.batches[:w.segmentEnd(0)] {
		firstSeg += int64(b.size)
	}
	if start == 0 || w.Size() < limit || w.Size()-firstSeg >= limit {
		t.Fatalf("start %d, size %d, first segment %d bytes, limit %d", start, w.Size(), firstSeg, limit)
	}
	must(t, m.DeleteBefore(start))
	sameLog(t, w, m)
	// Never the active segment.
	want := w.x.batches[segmentOf(t, w, len(w.x.batches)-1)].base
	start, err = w.ApplyRetention(time.UnixMilli(0), 1, 0, math.MaxInt64)
	must(t, err)
	if start != want {
		t.Fatalf("size retention of 1 byte: start %d", start)
	}
}

func TestWALRetentionByAge(t *testing.T) {
	w, m := segLog(t, 40)
	last := w.x.batches[len(w.x.batches)-1]
	// Expire everything older than batch 20's timestamp: the segments
	// before the one holding batch 20 go.
	now := time.UnixMilli(1000 + 10*20 + 60_000)
	want := w.x.batches[segmentOf(t, w, 20)].base
	start, err := w.ApplyRetention(now, 0, time.Minute, math.MaxInt64)
	must(t, err)
	if start != want || want == 0 {
		t.Fatalf("age retention: start %d, want %d", start, want)
	}
	must(t, m.DeleteBefore(start))
	sameLog(t, w, m)
	// Partly expired active segment: kept.
	now = time.UnixMilli(last.maxTS + 60_000)
	want = w.x.batches[segmentOf(t, w, len(w.x.batches)-1)].base
	start, err = w.ApplyRetention(now, 0, time.Minute, math.MaxInt64)
	must(t, err)
	if start != want {
		t.Fatalf("partly expired active segment: start %d, want %d", start, want)
	}
	// All expired: empty at the LEO.
	leo := w.LogEndOffset()
	start, err = w.ApplyRetention(now.Add(time.Millisecond), 0, time.Minute, math.MaxInt64)
	must(t, err)
	if start != leo || w.LogEndOffset() != leo || len(w.x.batches) != 0 {
		t.Fatalf("all expired: start %d, LEO %d (was %d)", start, w.LogEndOffset(), leo)
	}
	must(t, w.Close())
	w = openWAL(t, w.dir, 1024)
	defer w.Close()
	if w.LogStartOffset() != leo || w.LogEndOffset() != leo {
		t.Fatalf("reopened: [%d, %d), want %d", w.LogStartOffset(), w.LogEndOffset(), leo)
	}
}

// WriteWaits foretells exactly the writes that start a segment, and a
// write to a log the pool closed.
func TestWALWriteWaitsOnASegmentRollOrAReopen(t *testing.T) {
	w := openWAL(t, t.TempDir(), 1024)
	t.Cleanup(func() { w.Close() })
	m := NewMemLog()
	rolls := 0
	for i := range 60 {
		b := mkBatches(m.LogEndOffset(), spec{records: 1 + i%4, value: 40 + 13*(i%7)})
		waits := w.WriteWaits(b...)
		segs := len(w.segs)
		must(t, w.Write(b...))
		must(t, m.Append(b...))
		if rolled := len(w.segs) > segs; rolled != waits {
			t.Fatalf("write %d: WriteWaits %v, but it rolled: %v", i, waits, rolled)
		}
		if waits {
			rolls++
		}
	}
	if rolls < 3 {
		t.Fatalf("only %d rolls: the test writes too little", rolls)
	}
	if !w.hibernate() {
		t.Fatal("the log did not close")
	}
	b := mkBatches(m.LogEndOffset(), spec{records: 1, value: 10})
	if !w.WriteWaits(b...) {
		t.Fatal("a write to a closed log does not wait for its reopening")
	}
	must(t, w.Write(b...))
	must(t, m.Append(b...))
	sameLog(t, w, m)
}

// An append allocates little beyond the bytes it keeps: the segment being
// written holds its entries in one buffer sized for the whole segment,
// not one regrown (and copied) every few writes, which made about five
// bytes of garbage for each byte written and was a broker's largest
// allocation.
func TestWALAppendAllocatesAboutWhatItKeeps(t *testing.T) {
	const segBytes = 1 << 20
	w := openWAL(t, t.TempDir(), segBytes)
	t.Cleanup(func() { w.Close() })
	batch := mkBatch(0, spec{records: 16, value: 1000})
	write := func(n int) {
		for range n {
			b := slices.Clone(batch)
			record.SetBaseOffset(b, w.LogEndOffset())
			must(t, w.Write(b))
		}
	}
	write(64) // the log's own structures reach their size
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 2000 // about 32 MiB: 32 segments
	write(n)
	runtime.ReadMemStats(&after)
	written := float64(n * len(batch))
	// Each write clones its batch (1x); the segments keep what is written
	// (1x, plus the room a segment is given beyond its size).
	perByte := float64(after.TotalAlloc-before.TotalAlloc) / written
	t.Logf("%.2f bytes allocated per byte written", perByte)
	if perByte > 2.6 {
		t.Fatalf("appending %.0f MiB allocated %.2f bytes per byte written, want at most 2.6", written/(1<<20), perByte)
	}
}
