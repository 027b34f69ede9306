package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicemq/sluice/storage/syncjournal"
)

// syncLogs returns n logs under root with one batch written and not synced.
func syncLogs(t *testing.T, root string, n int) []*WALLog {
	t.Helper()
	var ws []*WALLog
	for i := range n {
		w, err := OpenWAL(filepath.Join(root, fmt.Sprint(i)), WALOptions{SegmentBytes: 1 << 20}, quietLogger())
		must(t, err)
		t.Cleanup(func() { w.Close() })
		must(t, w.Write(mkBatches(0, recs(2)...)...))
		ws = append(ws, w)
	}
	return ws
}

// A large wave is one syncfs, a small one an fsync per file; an error
// taking a Sync reaches only its own waiter either way.
func TestSyncerWaves(t *testing.T) {
	root := t.TempDir()
	y, err := NewSyncer(root)
	must(t, err)
	bad := errors.New("taking the sync failed")
	for _, n := range []int{3, 20} {
		var wave []syncWaiter
		errs := make([]error, n+1)
		for i, w := range syncLogs(t, filepath.Join(root, fmt.Sprint(n)), n) {
			wave = append(wave, syncWaiter{w.TakeSync(), func(err error) { errs[i] = err }})
		}
		wave = append(wave, syncWaiter{&Sync{takeErr: bad}, func(err error) { errs[n] = err }})
		if fs := y.runWave(wave); fs != (n >= DefaultFilesystemSyncAt) {
			t.Fatalf("wave of %d: syncfs used %v", n, fs)
		}
		for i, err := range errs[:n] {
			if err != nil {
				t.Fatalf("wave of %d: sync %d: %v", n, i, err)
			}
		}
		if !errors.Is(errs[n], bad) {
			t.Fatalf("wave of %d: the broken sync got %v", n, errs[n])
		}
		for _, w := range wave[:n] {
			if w.s.file != nil {
				t.Fatalf("wave of %d: a descriptor was left open", n)
			}
		}
	}
}

// Syncs submitted from many goroutines are all answered, in fewer waves
// than syncs once they overlap.
func TestSyncerSubmit(t *testing.T) {
	root := t.TempDir()
	y, err := NewSyncer(root)
	must(t, err)
	ws := syncLogs(t, root, 64)
	var wg sync.WaitGroup
	errs := make(chan error, len(ws))
	for _, w := range ws {
		wg.Add(1)
		go func() {
			y.Submit(w.TakeSync(), func(err error) { errs <- err; wg.Done() })
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	st := y.Stats()
	if st.Syncs != int64(len(ws)) || st.Waves < 1 || st.Waves > st.Syncs {
		t.Fatalf("stats %+v for %d syncs", st, len(ws))
	}
	t.Logf("%d syncs in %d waves (largest %d, %d with syncfs)", st.Syncs, st.Waves, st.LargestWave, st.FilesystemSyncs)
}

// Logs synced together in syncfs waves keep, through a power failure,
// everything their waves covered; what was written after the last wave is
// what the failure may take.
func TestSyncerWavesSurvivePowerLoss(t *testing.T) {
	root := t.TempDir()
	journal := filepath.Join(t.TempDir(), "journal")
	must(t, syncjournal.Enable(journal))
	defer syncjournal.Disable()
	y, err := NewSyncer(root)
	must(t, err)
	const logs = 24
	var ws []*WALLog
	for i := range logs {
		w, err := OpenWAL(filepath.Join(root, fmt.Sprint(i)), WALOptions{SegmentBytes: 1 << 20}, quietLogger())
		must(t, err)
		ws = append(ws, w) // never closed: closing would fsync
	}
	durable := make([]int64, logs)
	for round := range 6 {
		for _, w := range ws {
			must(t, w.Write(mkBatches(w.LogEndOffset(), spec{records: 3, ts: int64(round), value: 700})...))
		}
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Add(1)
			leo := w.LogEndOffset()
			y.Submit(w.TakeSync(), func(err error) {
				defer wg.Done()
				must(t, err)
				durable[i] = leo
			})
		}
		wg.Wait()
	}
	if st := y.Stats(); st.FilesystemSyncs == 0 {
		t.Fatalf("no wave used syncfs: %+v", st)
	}
	for _, w := range ws { // written, never synced
		must(t, w.Write(mkBatches(w.LogEndOffset(), recs(5)...)...))
	}
	loss, err := syncjournal.PowerLoss(root, journal)
	must(t, err)
	t.Logf("power loss dropped %d bytes from %d files", loss.Bytes, loss.Files)
	for i := range ws {
		w, err := OpenWAL(filepath.Join(root, fmt.Sprint(i)), WALOptions{SegmentBytes: 1 << 20}, quietLogger())
		must(t, err)
		if w.LogEndOffset() < durable[i] {
			t.Fatalf("log %d ends at %d after the power loss; its waves made it durable to %d", i, w.LogEndOffset(), durable[i])
		}
		readAll(t, w)
		w.Close()
	}
	if loss.Bytes == 0 {
		t.Fatal("the power loss took nothing: the unsynced writes should have gone")
	}
}
