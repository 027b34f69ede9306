package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicemq/sluice/storage/syncjournal"
)

// A write that starts a new segment can stop right after wal created it
// (a kill, or as here a failed write into it): wal had fsync'd the segment
// it finished first, so a power failure then must keep that segment whole,
// and the log must open with everything acknowledged. With the segment's
// fsync recorded only once the write returned, the journal was behind the
// disk: the power failure cut the finished segment short while the next
// one stayed, and the log would not open ("segment starts at WAL index
// N+1, previous one ends before N").
func TestWriteStoppedAfterSegmentRollSurvivesPowerLoss(t *testing.T) {
	pl := openJournaled(t)
	w, dir := pl.w, pl.dir
	for range 3 {
		must(t, w.Append(mkBatches(w.LogEndOffset(), spec{records: 2, value: 40})...))
	}
	acked := w.LogEndOffset()
	// The first batch fills the segment; the next one goes to a new
	// segment, whose file is /dev/full: wal creates it, and writing it fails.
	batches := mkBatches(acked, spec{records: 8, value: 100}, spec{records: 1, value: 10})
	if !w.rolls(batches[:1]) {
		t.Fatal("the first batch does not fill the segment")
	}
	next := filepath.Join(dir, segmentName(w.first+uint64(len(w.x.batches))+1))
	must(t, os.Symlink("/dev/full", next))
	if err := w.Write(batches...); err == nil {
		t.Fatal("the write into /dev/full worked")
	}
	// As a kill would have left it: created, nothing written. The log is
	// left open, as a crash leaves it.
	must(t, os.Remove(next))
	must(t, os.WriteFile(next, nil, 0o640))
	w = pl.powerLoss(t)
	if w.LogEndOffset() < acked {
		t.Fatalf("LEO %d after the power loss, %d was acknowledged", w.LogEndOffset(), acked)
	}
	readAll(t, w)
}

// A truncation can stop right after wal renamed the segment it rewrote
// into place (a kill, or as here the test seam walTruncated): wal had
// fsync'd the rewritten file before the rename, so a power failure then
// must keep it, and the log must open with every entry it still held.
// With the file recorded in the sync journal only once wal returned, the
// simulated power loss emptied it: after TruncateTo the entries before
// the truncation point were lost, and after a DeleteBefore that kept only
// the last segment the log came back empty at offset 0. (A DeleteBefore
// keeping older segments too was covered already: the rewritten first
// segment keeps its name, and the SyncedBeforeCreate record of its roll
// holds for whatever file has that name while the next one exists.)
func TestTruncationStoppedAfterRenameSurvivesPowerLoss(t *testing.T) {
	stop := errors.New("stopped after wal's rename")
	for _, tc := range []struct {
		name  string
		seg   int // the segment the call rewrites
		cut   func(*WALLog, int64) error
		front bool
	}{
		{"TruncateTo", 1, (*WALLog).TruncateTo, false},
		{"TruncateTo/tail", 2, (*WALLog).TruncateTo, false},
		{"DeleteBefore", 1, (*WALLog).DeleteBefore, true},
		{"DeleteBefore/tail", 2, (*WALLog).DeleteBefore, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := openJournaled(t)
			w := pl.w
			var appended [][]byte
			for len(w.segs) < 3 || w.segmentBytes(2) < 512 {
				b := mkBatches(w.LogEndOffset(), spec{records: 2, value: 40})
				must(t, w.Append(b...))
				appended = append(appended, b...)
			}
			// The third batch of segment seg: TruncateTo keeps the two
			// before it, DeleteBefore the whole segment.
			from := int(w.segs[tc.seg] - w.first)
			if w.segmentEnd(from) < from+3 {
				t.Fatalf("segment %d holds fewer than 3 batches", tc.seg)
			}
			offset := w.x.batches[from+2].base
			wantStart, wantEnd := int64(0), offset
			keep := appended[:from+2]
			if tc.front {
				wantStart, wantEnd = w.x.batches[from].base, w.LogEndOffset()
				keep = appended[from:]
			}
			w.walTruncated = func() error { return stop }
			if err := tc.cut(w, offset); !errors.Is(err, stop) {
				t.Fatalf("the call returned %v, want it stopped", err)
			}
			w = pl.powerLoss(t)
			if w.LogStartOffset() != wantStart || w.LogEndOffset() != wantEnd {
				t.Fatalf("log holds [%d, %d) after the power loss, want [%d, %d)",
					w.LogStartOffset(), w.LogEndOffset(), wantStart, wantEnd)
			}
			got := readAll(t, w)
			if len(got) != len(keep) {
				t.Fatalf("%d batches after the power loss, want %d", len(got), len(keep))
			}
			for i := range got {
				if !bytes.Equal(got[i], keep[i]) {
					t.Fatalf("batch %d differs after the power loss", i)
				}
			}
		})
	}
}

// The record of a rewritten segment covers only what wal wrote and
// fsync'd: batches written after the truncation and never synced are lost
// to a power failure.
func TestTruncatedSegmentKeepsNoUnsyncedWrites(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "log")
	journal := filepath.Join(t.TempDir(), "journal")
	must(t, syncjournal.Enable(journal))
	defer syncjournal.Disable()
	opts := WALOptions{SegmentBytes: 1 << 20}
	w, err := OpenWAL(dir, opts, quietLogger())
	must(t, err)
	for range 6 {
		must(t, w.Append(mkBatches(w.LogEndOffset(), spec{records: 2, value: 40})...))
	}
	must(t, w.TruncateTo(6))
	must(t, w.Write(mkBatches(6, recs(2, 2, 2)...)...)) // no sync
	syncjournal.Disable()
	if _, err := syncjournal.PowerLoss(root, journal); err != nil {
		t.Fatal(err)
	}
	w, err = OpenWAL(dir, opts, quietLogger())
	must(t, err)
	defer w.Close()
	if w.LogEndOffset() != 6 {
		t.Fatalf("LEO %d after the power loss, want 6 (the unsynced writes gone)", w.LogEndOffset())
	}
	readAll(t, w)
}

// journaledLog is a log of 1 KiB segments written with the sync journal
// on, so that a simulated power loss keeps only what was fsync'd.
type journaledLog struct {
	root, dir, journal string
	w                  *WALLog
}

func openJournaled(t *testing.T) *journaledLog {
	t.Helper()
	root := t.TempDir()
	pl := &journaledLog{root: root, dir: filepath.Join(root, "log"), journal: filepath.Join(t.TempDir(), "journal")}
	must(t, syncjournal.Enable(pl.journal))
	t.Cleanup(syncjournal.Disable)
	w, err := OpenWAL(pl.dir, WALOptions{SegmentBytes: 1024}, quietLogger())
	must(t, err)
	pl.w = w
	return pl
}

// powerLoss cuts the files back to what the journal says was fsync'd, the
// log left open as a crash leaves it, and opens the log again.
func (pl *journaledLog) powerLoss(t *testing.T) *WALLog {
	t.Helper()
	syncjournal.Disable()
	if _, err := syncjournal.PowerLoss(pl.root, pl.journal); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWAL(pl.dir, WALOptions{SegmentBytes: 1024}, quietLogger())
	must(t, err)
	t.Cleanup(func() { w.Close() })
	return w
}
