package storage

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// harness runs one conformance scenario against one Log implementation.
type harness struct {
	*testing.T
	l      Log
	reopen func() // close and reopen (WAL); nothing for MemLog
}

// impls are the logs the conformance suite runs against. The WAL uses one
// large segment, so that here it deletes nothing short of everything; the
// segment-granular behaviour has its own tests.
var impls = []struct {
	name string
	open func(t *testing.T) *harness
}{
	{"mem", func(t *testing.T) *harness {
		return &harness{T: t, l: NewMemLog(), reopen: func() {}}
	}},
	{"wal", func(t *testing.T) *harness {
		dir := t.TempDir()
		open := func() Log {
			w, err := OpenWAL(dir, WALOptions{SegmentBytes: 1 << 20}, quietLogger())
			must(t, err)
			return w
		}
		h := &harness{T: t, l: open()}
		h.reopen = func() { must(t, h.l.Close()); h.l = open() }
		t.Cleanup(func() { h.l.Close() })
		return h
	}},
}

var scenarios = []struct {
	name string
	run  func(h *harness)
}{
	{"empty", testEmpty},
	{"append and read", testAppendRead},
	{"read edges", testReadEdges},
	{"truncate", testTruncate},
	{"bad append", testBadAppend},
	{"epochs", testEpochs},
	{"offset for timestamp", testOffsetForTimestamp},
	{"delete everything", testDeleteAll},
	{"retention", testRetention},
	{"reset", testReset},
	{"closed", testClosed},
}

func TestConformance(t *testing.T) {
	for _, sc := range scenarios {
		for _, im := range impls {
			t.Run(sc.name+"/"+im.name, func(t *testing.T) { sc.run(im.open(t)) })
		}
	}
}

// state checks start, LEO and the batches held.
func (h *harness) state(start, leo int64, batches [][]byte) {
	h.Helper()
	if got := h.l.LogStartOffset(); got != start {
		h.Fatalf("start %d, want %d", got, start)
	}
	if got := h.l.LogEndOffset(); got != leo {
		h.Fatalf("LEO %d, want %d", got, leo)
	}
	var size int64
	for _, b := range batches {
		size += int64(len(b))
	}
	if got := h.l.Size(); got != size {
		h.Fatalf("size %d, want %d", got, size)
	}
	h.read(start, 1<<30, leo, batches...)
}

// read checks what Read returns.
func (h *harness) read(offset int64, maxBytes int, maxOffset int64, want ...[]byte) {
	h.Helper()
	got, err := h.l.Read(offset, maxBytes, maxOffset)
	if err != nil {
		h.Fatalf("Read(%d, %d, %d): %v", offset, maxBytes, maxOffset, err)
	}
	if len(got) != len(want) {
		h.Fatalf("Read(%d, %d, %d): %d batches, want %d", offset, maxBytes, maxOffset, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			h.Fatalf("Read(%d, %d, %d): batch %d differs", offset, maxBytes, maxOffset, i)
		}
	}
}

func (h *harness) append(batches ...[]byte) {
	h.Helper()
	must(h, h.l.Append(batches...))
}

func testEmpty(h *harness) {
	h.state(0, 0, nil)
	h.read(0, 100, 100)
	_, err := h.l.Read(1, 100, 100)
	wantErr(h, err, ErrOffsetOutOfRange)
	if _, _, ok := h.l.EndOffsetForEpoch(0); ok {
		h.Fatal("EndOffsetForEpoch on an empty log")
	}
	if _, _, ok, err := h.l.OffsetForTimestamp(0); ok || err != nil {
		h.Fatalf("OffsetForTimestamp on an empty log: %v %v", ok, err)
	}
	must(h, h.l.Append()) // no batches: nothing happens
	h.reopen()
	h.state(0, 0, nil)
}

func testAppendRead(h *harness) {
	b := mkBatches(0, recs(1, 3, 2, 5)...)
	h.append(b[0], b[1], b[2]) // one call, several batches
	h.append(b[3])
	h.state(0, 11, b)
	for off, first := range []int{0, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3} {
		h.read(int64(off), 1<<20, 11, b[first:]...)
	}
	// The caller's buffer is not retained.
	orig := slices.Clone(b[3])
	b[3][len(b[3])-1] ^= 0xff
	h.read(6, 1<<20, 11, orig)
	b[3] = orig
	h.reopen()
	h.state(0, 11, b)
	h.append(mkBatch(11, spec{records: 2}))
	h.read(11, 1, 13, mkBatch(11, spec{records: 2}))
}

func testReadEdges(h *harness) {
	b := mkBatches(0, recs(2, 2, 2, 2)...)
	h.append(b...)
	n := len(b[0])                // all four batches have the same size
	h.read(3, 1<<20, 8, b[1:]...) // offset inside a batch
	h.read(0, 1, 8, b[0])         // maxBytes below the first batch
	h.read(0, 0, 8, b[0])
	h.read(1, 2*n, 8, b[0], b[1]) // exactly two batches
	h.read(1, 2*n-1, 8, b[0])
	h.read(0, 1<<20, 4, b[0], b[1])       // maxOffset at a boundary
	h.read(0, 1<<20, 5, b[0], b[1], b[2]) // maxOffset inside a batch
	h.read(5, 1<<20, 5)                   // offset == maxOffset
	h.read(6, 1<<20, 5)                   // offset beyond maxOffset
	h.read(8, 1<<20, 100)                 // offset == LEO
	for _, off := range []int64{9, 100, -1} {
		if _, err := h.l.Read(off, 1<<20, 100); err == nil {
			h.Fatalf("Read(%d) succeeded", off)
		} else {
			wantErr(h, err, ErrOffsetOutOfRange)
		}
	}
	must(h, h.l.DeleteBefore(8)) // empties the log at 8
	_, err := h.l.Read(7, 1<<20, 100)
	wantErr(h, err, ErrOffsetOutOfRange)
	h.read(8, 1<<20, 100)
}

func testTruncate(h *harness) {
	b := mkBatches(0, recs(3, 3, 3, 3)...)
	h.append(b...)
	wantErr(h, h.l.TruncateTo(13), ErrOffsetOutOfRange)
	wantErr(h, h.l.TruncateTo(-1), ErrOffsetOutOfRange)
	must(h, h.l.TruncateTo(12)) // at the LEO: nothing
	h.state(0, 12, b)
	must(h, h.l.TruncateTo(10)) // inside the last batch
	h.state(0, 9, b[:3])
	must(h, h.l.TruncateTo(6)) // at a boundary
	h.state(0, 6, b[:2])
	h.reopen()
	h.state(0, 6, b[:2])
	must(h, h.l.TruncateTo(0)) // to empty
	h.state(0, 0, nil)
	h.reopen()
	h.state(0, 0, nil)
	c := mkBatches(0, recs(4, 1)...)
	h.append(c...)
	h.state(0, 5, c)

	// Truncating to empty after the start moved keeps the LEO there.
	must(h, h.l.DeleteBefore(5))
	h.append(mkBatches(5, recs(2, 2)...)...)
	must(h, h.l.TruncateTo(5))
	h.state(5, 5, nil)
	h.reopen()
	h.state(5, 5, nil)
	d := mkBatches(5, recs(2)...)
	h.append(d...)
	h.reopen()
	h.state(5, 7, d)
}

func testBadAppend(h *harness) {
	b := mkBatches(0, recs(2, 2)...)
	h.append(b[0])
	bad := func(what string, batches ...[]byte) {
		h.Helper()
		if err := h.l.Append(batches...); !errors.Is(err, ErrBadAppend) {
			h.Fatalf("%s: got %v, want ErrBadAppend", what, err)
		}
		h.state(0, 2, b[:1])
	}
	bad("gap", mkBatch(3, spec{records: 1}))
	bad("overlap", mkBatch(1, spec{records: 1}))
	crc := slices.Clone(b[1])
	crc[len(crc)-1] ^= 1
	bad("CRC", crc)
	bad("second of two", b[1], mkBatch(5, spec{records: 1}))
	bad("short", b[1][:40])
	bad("epoch goes down", mkBatch(2, spec{records: 1, epoch: -1}))
	h.reopen()
	h.state(0, 2, b[:1])
	h.append(b[1])
	h.state(0, 4, b)
}

func testEpochs(h *harness) {
	if _, _, ok := h.l.EndOffsetForEpoch(3); ok {
		h.Fatal("empty cache answered")
	}
	// Epoch -1 (none) is not cached.
	b := mkBatches(0,
		spec{records: 2, epoch: -1}, // 0-1
		spec{records: 2, epoch: 1},  // 2-3
		spec{records: 2, epoch: 1},  // 4-5
		spec{records: 2, epoch: 3},  // 6-7
		spec{records: 2, epoch: 3},  // 8-9
		spec{records: 2, epoch: 4},  // 10-11
	)
	h.append(b...)
	check := func(want []EpochStart, queries ...[4]int64) {
		h.Helper()
		if got := h.l.Epochs(); !slices.Equal(got, want) {
			h.Fatalf("epochs %v, want %v", got, want)
		}
		for _, q := range queries {
			e, end, ok := h.l.EndOffsetForEpoch(int32(q[0]))
			if ok != (q[3] == 1) || ok && (int64(e) != q[1] || end != q[2]) {
				h.Fatalf("EndOffsetForEpoch(%d) = %d, %d, %v; want %v", q[0], e, end, ok, q[1:])
			}
		}
	}
	full := []EpochStart{{1, 2}, {3, 6}, {4, 10}}
	// {requested, found epoch, end offset, ok}
	check(full, [4]int64{0, 0, 0, 0}, [4]int64{1, 1, 6, 1}, [4]int64{2, 1, 6, 1},
		[4]int64{3, 3, 10, 1}, [4]int64{4, 4, 12, 1}, [4]int64{9, 4, 12, 1})
	h.reopen()
	check(full)
	got := h.l.Epochs()
	got[0].Epoch = 99 // a copy
	check(full)

	must(h, h.l.TruncateTo(9)) // inside epoch 3's second batch
	check(full[:2], [4]int64{3, 3, 8, 1}, [4]int64{4, 3, 8, 1})
	must(h, h.l.TruncateTo(6)) // epoch 3 starts here: gone
	check(full[:1], [4]int64{3, 1, 6, 1})
	h.append(mkBatch(6, spec{records: 1, epoch: 5}))
	check([]EpochStart{{1, 2}, {5, 6}}, [4]int64{4, 1, 6, 1}, [4]int64{5, 5, 7, 1})
	h.reopen()
	check([]EpochStart{{1, 2}, {5, 6}})
	must(h, h.l.TruncateTo(0))
	check(nil, [4]int64{5, 0, 0, 0})
}

func testOffsetForTimestamp(h *harness) {
	// Timestamps: batch 0 at 100-102, batch 1 at 200-203, batch 2 at 150-151
	// (out of order), batch 3 at 300.
	b := mkBatches(0,
		spec{records: 3, ts: 100},
		spec{records: 4, ts: 200},
		spec{records: 2, ts: 150},
		spec{records: 1, ts: 300},
	)
	h.append(b...)
	h.reopen()
	for _, c := range [][3]int64{ // ts, offset, timestamp
		{0, 0, 100}, {100, 0, 100}, {101, 1, 101}, {102, 2, 102},
		{103, 3, 200}, {150, 3, 200}, {202, 5, 202}, {204, 9, 300}, {300, 9, 300},
	} {
		off, ts, ok, err := h.l.OffsetForTimestamp(c[0])
		if err != nil || !ok || off != c[1] || ts != c[2] {
			h.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d", c[0], off, ts, ok, err, c[1], c[2])
		}
	}
	if _, _, ok, err := h.l.OffsetForTimestamp(301); ok || err != nil {
		h.Fatalf("OffsetForTimestamp(301) = %v, %v", ok, err)
	}
}

func testDeleteAll(h *harness) {
	b := mkBatches(0, recs(2, 3)...)
	h.append(b...)
	wantErr(h, h.l.DeleteBefore(6), ErrOffsetOutOfRange)
	must(h, h.l.DeleteBefore(0))
	h.state(0, 5, b)
	must(h, h.l.DeleteBefore(5))
	h.state(5, 5, nil)
	h.reopen()
	h.state(5, 5, nil)
	must(h, h.l.DeleteBefore(3)) // below the start: nothing
	c := mkBatches(5, recs(1, 1)...)
	h.append(c...)
	h.reopen()
	h.state(5, 7, c)
	if e := h.l.Epochs(); !slices.Equal(e, []EpochStart{{0, 5}}) {
		h.Fatalf("epochs %v", e)
	}
}

func testRetention(h *harness) {
	now := time.UnixMilli(10_000)
	b := mkBatches(0,
		spec{records: 2, ts: 1000, value: 100},
		spec{records: 2, ts: 2000, value: 100},
		spec{records: 2, ts: 3000, value: 100},
	)
	h.append(b...)
	// Nothing is older than 9 s or beyond 1 MB; zero limits are off.
	for _, lim := range [][2]int64{{0, 0}, {1 << 20, 0}, {0, 9000}, {-1, -1}} {
		start, err := h.l.ApplyRetention(now, lim[0], time.Duration(lim[1])*time.Millisecond, math.MaxInt64)
		must(h, err)
		if start != 0 {
			h.Fatalf("retention %v: start %d", lim, start)
		}
	}
	h.state(0, 6, b)
	// Nothing at or above maxOffset (the high watermark) goes, however old.
	start, err := h.l.ApplyRetention(now, 0, time.Second, 1)
	must(h, err)
	if start != 0 {
		h.Fatalf("retention deleted data above maxOffset: start %d", start)
	}
	h.state(0, 6, b)
	// Size retention never deletes the newest unit.
	start, err = h.l.ApplyRetention(now, 1, 0, math.MaxInt64)
	must(h, err)
	if want := h.l.LogStartOffset(); start != want || start > 4 {
		h.Fatalf("size retention: start %d (log says %d)", start, want)
	}
	h.read(4, 1<<20, 6, b[2])
	// Everything expired: the log empties at its LEO.
	start, err = h.l.ApplyRetention(now, 0, time.Second, math.MaxInt64)
	must(h, err)
	if start != 6 {
		h.Fatalf("age retention: start %d", start)
	}
	h.state(6, 6, nil)
	h.reopen()
	h.state(6, 6, nil)
}

func testReset(h *harness) {
	h.append(mkBatches(0, spec{records: 3}, spec{records: 2})...)
	wantErr(h, h.l.Reset(4), ErrOffsetOutOfRange)
	must(h, h.l.Reset(100))
	h.state(100, 100, nil)
	h.reopen()
	h.state(100, 100, nil)
	b := mkBatch(100, spec{records: 2, epoch: 3})
	h.append(b)
	h.state(100, 102, [][]byte{b})
	if e := h.l.Epochs(); !slices.Equal(e, []EpochStart{{3, 100}}) {
		h.Fatalf("epochs after reset %v", e)
	}
}

func testClosed(h *harness) {
	h.append(mkBatch(0, spec{records: 1}))
	must(h, h.l.Close())
	must(h, h.l.Close())
	wantErr(h, h.l.Append(mkBatch(1, spec{records: 1})), ErrClosed)
	_, err := h.l.Read(0, 1, 1)
	wantErr(h, err, ErrClosed)
	wantErr(h, h.l.TruncateTo(0), ErrClosed)
	wantErr(h, h.l.DeleteBefore(0), ErrClosed)
	_, err = h.l.ApplyRetention(time.Now(), 1, 1, math.MaxInt64)
	wantErr(h, err, ErrClosed)
	_, _, _, err = h.l.OffsetForTimestamp(0)
	wantErr(h, err, ErrClosed)
	h.reopen = func() {} // already closed
}

// Write and SyncFunc: a sync may run on another goroutine while later
// writes go on (and start new segments: 4 KiB values in 1 MiB segments);
// everything written stays readable and survives a reopen.
func TestWriteWithConcurrentSync(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			h := im.open(t)
			var next int64
			var all [][]byte
			done := make(chan error, 600)
			for round := 0; round < 600; round++ {
				b := mkBatch(next, spec{records: 3, value: 4 << 10})
				next += 3
				all = append(all, b)
				must(h, h.l.Write(b))
				fn := h.l.SyncFunc()
				go func() { done <- fn() }()
			}
			for range 600 {
				must(h, <-done)
			}
			h.state(0, next, all)
			h.reopen()
			h.state(0, next, all)
		})
	}
}
