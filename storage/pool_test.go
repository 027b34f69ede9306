package storage

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Far more logs than the budget holds open at once are written and read
// back whole; the pool closes and reopens them as it goes and keeps its
// estimate of what the open ones hold near the budget.
func TestPoolManyLogsUnderBudget(t *testing.T) {
	const (
		logs   = 300
		rounds = 12
		budget = 2 << 20
	)
	pool := NewPool(budget, time.Hour, 0)
	defer pool.Close()
	root := t.TempDir()
	open := func(i int) *WALLog {
		w, err := OpenWAL(filepath.Join(root, fmt.Sprint(i)), WALOptions{SegmentBytes: 1 << 20, NoSync: true, Pool: pool}, quietLogger())
		must(t, err)
		return w
	}
	ws, ms := make([]*WALLog, logs), make([]*MemLog, logs)
	for i := range ws {
		ws[i], ms[i] = open(i), NewMemLog()
	}
	maxOpen := int64(0)
	for r := range rounds {
		for i, w := range ws {
			b := mkBatches(ms[i].LogEndOffset(), spec{records: 4, ts: int64(r), value: 2000})
			must(t, w.Write(b...))
			must(t, ms[i].Append(b...))
		}
		maxOpen = max(maxOpen, pool.Stats().Bytes)
	}
	// Reopen half of them from their snapshots; read everything back.
	for i := 0; i < logs; i += 2 {
		must(t, ws[i].Close())
		ws[i] = open(i)
	}
	for i, w := range ws {
		sameLog(t, w, ms[i])
		checkSegments(t, w)
	}
	st := pool.Stats()
	t.Logf("pool: %+v; largest estimate seen while writing %d KiB", st, maxOpen>>10)
	if maxOpen > budget+budget/4 {
		t.Fatalf("open logs held an estimated %d KiB while written, over the budget of %d KiB", maxOpen>>10, budget>>10)
	}
	if st.Logs != logs {
		t.Fatalf("pool counts %d logs, want %d", st.Logs, logs)
	}
	if st.Closed == 0 || st.Reopened == 0 {
		t.Fatalf("the pool closed %d and reopened %d logs; %d logs of about %d KiB each cannot all stay open in %d KiB",
			st.Closed, st.Reopened, logs, rounds*8, budget>>10)
	}
	// Left alone, the pool sheds back under the budget.
	deadline := time.Now().Add(10 * time.Second)
	for pool.Stats().Bytes > budget && time.Now().Before(deadline) {
		pool.wake <- struct{}{}
		time.Sleep(10 * time.Millisecond)
	}
	if b := pool.Stats().Bytes; b > budget {
		t.Fatalf("open logs hold an estimated %d bytes, over the budget of %d", b, budget)
	}
	for _, w := range ws {
		must(t, w.Close())
	}
	if st := pool.Stats(); st.Logs != 0 || st.Open != 0 || st.Bytes != 0 {
		t.Fatalf("after closing every log the pool still counts %+v", st)
	}
}

// A log unused for the idle time is closed and reopens on its next use.
func TestPoolClosesIdleLogs(t *testing.T) {
	pool := NewPool(1<<30, 50*time.Millisecond, 0)
	defer pool.Close()
	w, err := OpenWAL(t.TempDir(), WALOptions{SegmentBytes: 1 << 20, NoSync: true, Pool: pool}, quietLogger())
	must(t, err)
	defer w.Close()
	m := NewMemLog()
	b := mkBatches(0, recs(3)...)
	must(t, w.Append(b...))
	must(t, m.Append(b...))
	deadline := time.Now().Add(10 * time.Second)
	for pool.Stats().Closed == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	w.mu.Lock()
	closed := w.wal == nil
	w.mu.Unlock()
	if !closed || pool.Stats().Open != 0 {
		t.Fatalf("an idle log is still open: %+v", pool.Stats())
	}
	sameLog(t, w, m)
	if pool.Stats().Reopened != 1 {
		t.Fatalf("read of a closed log: %+v, want one reopen", pool.Stats())
	}
}

// Segment size follows the number of logs: the budget over three times the count,
// never under MinSegmentBytes.
func TestPoolSegmentSize(t *testing.T) {
	pool := NewPool(512<<20, 0, 0)
	defer pool.Close()
	for _, c := range []struct{ logs, want int }{{1, 512 << 20 / 3}, {100, 512 << 20 / 300}, {2000, MinSegmentBytes}} {
		pool.mu.Lock()
		pool.logs = c.logs
		pool.mu.Unlock()
		if got := pool.segmentSize(); got != c.want {
			t.Errorf("%d logs: segment size %d, want %d", c.logs, got, c.want)
		}
	}
}

// A log written to holds a whole segment's buffer from its first write
// (wal reserves it then), and the pool counts it so.
func TestPoolCountsTheSegmentBufferOfAWrittenLog(t *testing.T) {
	pool := NewPool(64<<20, time.Hour, 0)
	defer pool.Close()
	const segBytes = 1 << 20
	w, err := OpenWAL(t.TempDir(), WALOptions{SegmentBytes: segBytes, NoSync: true, Pool: pool}, quietLogger())
	must(t, err)
	defer w.Close()
	must(t, w.Write(mkBatch(0, spec{records: 1, value: 100})))
	if got, want := pool.Stats().Bytes, int64(segBytes+segBytes/8); got < want {
		t.Fatalf("the pool counts %d bytes for a log written to once, want at least the %d of its segment buffer", got, want)
	}
}
