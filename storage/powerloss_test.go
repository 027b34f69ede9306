package storage

import (
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
	root := t.TempDir()
	dir := filepath.Join(root, "log")
	journal := filepath.Join(t.TempDir(), "journal")
	must(t, syncjournal.Enable(journal))
	defer syncjournal.Disable()
	opts := WALOptions{SegmentBytes: 1024}
	w, err := OpenWAL(dir, opts, quietLogger())
	must(t, err)
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
	syncjournal.Disable()
	if _, err := syncjournal.PowerLoss(root, journal); err != nil {
		t.Fatal(err)
	}
	w, err = OpenWAL(dir, opts, quietLogger())
	must(t, err)
	defer w.Close()
	if w.LogEndOffset() < acked {
		t.Fatalf("LEO %d after the power loss, %d was acknowledged", w.LogEndOffset(), acked)
	}
	readAll(t, w)
}
