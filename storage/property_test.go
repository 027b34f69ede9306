package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWALMatchesModel runs random operations on a WAL log with small
// segments and on a MemLog, and checks after every step that they hold the
// same thing. WAL deletion is segment-granular, so the model deletes up to
// wherever the WAL's start offset went.
func TestWALMatchesModel(t *testing.T) {
	for seed := range 6 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, uint64(seed), 400) })
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	// Half the seeds run under a pool with a budget of about two segments,
	// so that its goroutine closes the WAL while the steps go on.
	var pool *Pool
	if seed >= 3 {
		pool = NewPool(8<<10, time.Millisecond, 0)
		t.Cleanup(pool.Close)
	}
	open := func() *WALLog {
		w, err := OpenWAL(dir, WALOptions{SegmentBytes: 4 << 10, NoSync: seed%2 == 1, Pool: pool}, quietLogger())
		must(t, err)
		return w
	}
	w, m := open(), NewMemLog()
	t.Cleanup(func() { w.Close() })
	// syncs run on their own goroutines, as the partition actor runs them,
	// while the steps go on; each is waited for before a reopen.
	var syncs []chan error
	waitSyncs := func() {
		for _, ch := range syncs {
			must(t, <-ch)
		}
		syncs = nil
	}
	epoch, ts := int32(0), int64(1_000_000)
	var ops []string // for failure messages
	for step := range steps {
		start, leo := m.LogStartOffset(), m.LogEndOffset()
		between := func() int64 { return start + rng.Int64N(leo-start+1) }
		switch op := rng.IntN(100); {
		case op < 45:
			var specs []spec
			for range 1 + rng.IntN(4) {
				if rng.IntN(10) == 0 {
					epoch += 1 + rng.Int32N(2)
				}
				ts += rng.Int64N(100) - 20 // mostly increasing
				specs = append(specs, spec{records: 1 + rng.IntN(20), epoch: epoch, ts: ts, value: rng.IntN(200)})
			}
			batches := mkBatches(leo, specs...)
			if rng.IntN(2) == 0 {
				ops = append(ops, fmt.Sprintf("append %d batches at %d", len(batches), leo))
				must(t, w.Append(batches...))
			} else {
				ops = append(ops, fmt.Sprintf("write %d batches at %d, sync in the background", len(batches), leo))
				must(t, w.Write(batches...))
				ch, fn := make(chan error, 1), w.SyncFunc()
				go func() { ch <- fn() }()
				syncs = append(syncs, ch)
			}
			must(t, m.Append(batches...))
		case op < 50:
			bad := mkBatches(leo+1+rng.Int64N(3), spec{records: 1, epoch: epoch})
			ops = append(ops, "bad append")
			wantErr(t, w.Append(bad...), ErrBadAppend)
		case op < 62:
			off := start - 1 + rng.Int64N(leo-start+3)
			maxBytes, maxOff := rng.IntN(3000), off-1+rng.Int64N(leo-off+3)
			ops = append(ops, fmt.Sprintf("read %d %d %d", off, maxBytes, maxOff))
			got, gerr := w.Read(off, maxBytes, maxOff)
			want, werr := m.Read(off, maxBytes, maxOff)
			if errors.Is(gerr, ErrOffsetOutOfRange) != errors.Is(werr, ErrOffsetOutOfRange) || (gerr == nil) != (werr == nil) {
				t.Fatalf("step %d %s: wal error %v, model %v", step, ops[len(ops)-1], gerr, werr)
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("step %d %s: wal read %d batches, model %d", step, ops[len(ops)-1], len(got), len(want))
			}
		case op < 72:
			off := between()
			ops = append(ops, fmt.Sprintf("truncate to %d", off))
			must(t, w.TruncateTo(off))
			must(t, m.TruncateTo(off))
		case op < 80:
			off := between()
			ops = append(ops, fmt.Sprintf("delete before %d", off))
			must(t, w.DeleteBefore(off))
			checkDeleted(t, m, off, w.LogStartOffset())
			must(t, m.DeleteBefore(w.LogStartOffset()))
		case op < 85:
			maxBytes := rng.Int64N(m.Size() + 1)
			maxAge := time.Duration(rng.Int64N(2000)) * time.Millisecond
			if rng.IntN(2) == 0 {
				maxAge = 0
			}
			ops = append(ops, fmt.Sprintf("retention %d %v", maxBytes, maxAge))
			got, err := w.ApplyRetention(time.UnixMilli(ts), maxBytes, maxAge, math.MaxInt64)
			must(t, err)
			if got != w.LogStartOffset() || got < start {
				t.Fatalf("step %d: retention returned %d, start %d, was %d", step, got, w.LogStartOffset(), start)
			}
			must(t, m.DeleteBefore(got))
		case op < 92:
			q := ts - rng.Int64N(3000)
			ops = append(ops, fmt.Sprintf("offset for timestamp %d", q))
			o1, t1, ok1, err1 := w.OffsetForTimestamp(q)
			o2, t2, ok2, err2 := m.OffsetForTimestamp(q)
			if o1 != o2 || t1 != t2 || ok1 != ok2 || err1 != nil || err2 != nil {
				t.Fatalf("step %d: OffsetForTimestamp(%d): wal %d %d %v %v, model %d %d %v %v", step, q, o1, t1, ok1, err1, o2, t2, ok2, err2)
			}
		case op < 95:
			// A crash: the files as they are now, the WAL still open (and
			// perhaps an index snapshot from an earlier close or idle spell).
			ops = append(ops, "crash and reopen")
			waitSyncs()
			w.mu.Lock()
			crashed := copyDir(t, dir)
			w.mu.Unlock()
			must(t, w.Close())
			dir = crashed
			w = open()
		case op < 97:
			ops = append(ops, "close the WAL as the pool does")
			w.hibernate()
		default:
			ops = append(ops, "reopen")
			waitSyncs()
			must(t, w.Close())
			w = open()
		}
		if t.Failed() {
			return
		}
		func() {
			defer func() {
				if t.Failed() {
					t.Logf("after step %d, ops: %v", step, ops[max(0, len(ops)-10):])
				}
			}()
			sameLog(t, w, m)
			for e := int32(-1); e <= epoch+1; e++ {
				e1, o1, ok1 := w.EndOffsetForEpoch(e)
				e2, o2, ok2 := m.EndOffsetForEpoch(e)
				if e1 != e2 || o1 != o2 || ok1 != ok2 {
					t.Fatalf("EndOffsetForEpoch(%d): wal %d %d %v, model %d %d %v", e, e1, o1, ok1, e2, o2, ok2)
				}
			}
			checkSegments(t, w)
		}()
	}
	waitSyncs()
}

// checkDeleted checks a WAL DeleteBefore(off) against the model before it
// catches up: the new start is a batch boundary at or before the batch
// holding off, or the LEO if off was the LEO.
func checkDeleted(t *testing.T, m *MemLog, off, start int64) {
	t.Helper()
	i := m.x.find(off)
	if i == len(m.x.batches) {
		if start != m.LogEndOffset() {
			t.Fatalf("delete before LEO %d: start %d", off, start)
		}
		return
	}
	if start > m.x.batches[i].base || start < m.LogStartOffset() || m.x.find(start) != i && m.x.batches[m.x.find(start)].base != start {
		t.Fatalf("delete before %d: start %d is not a boundary in [%d, %d]", off, start, m.LogStartOffset(), m.x.batches[i].base)
	}
}

// checkSegments checks that the WAL's mirror of wal's segments matches the
// files.
func checkSegments(t *testing.T, w *WALLog) {
	t.Helper()
	segs, err := listSegments(w.dir)
	must(t, err)
	if !slices.Equal(segs, w.segs) {
		t.Fatalf("segment files %v, mirror %v", segs, w.segs)
	}
	fi, err := os.Stat(filepath.Join(w.dir, segmentName(segs[len(segs)-1])))
	must(t, err)
	if fi.Size() != int64(w.tail) {
		t.Fatalf("last segment holds %d bytes, mirror %d", fi.Size(), w.tail)
	}
	if segs[0] != w.first {
		t.Fatalf("first segment %d, first index %d", segs[0], w.first)
	}
}
