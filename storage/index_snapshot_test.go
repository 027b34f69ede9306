package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A log closed cleanly opens from its snapshot without reading a segment,
// and holds the same as the model.
func TestSnapshotOpensWithoutScan(t *testing.T) {
	dir, m := buildLog(t, false)
	w := openWAL(t, dir, 1024)
	defer w.Close()
	if w.scanned != 0 || w.wal != nil {
		t.Fatalf("read %d segments and opened the WAL; want neither", w.scanned)
	}
	sameLog(t, w, m)
	checkSegments(t, w)
}

// After a crash while the log was in use, only the segments written since
// the snapshot are read.
func TestSnapshotAfterCrashReadsOnlyNewSegments(t *testing.T) {
	dir, m := buildLog(t, false)
	w := openWAL(t, dir, 1024)
	before := len(w.segs)
	for len(w.segs) < before+3 {
		b := mkBatches(m.LogEndOffset(), spec{records: 2, epoch: 5, value: 30}, spec{records: 3, epoch: 5, value: 30})
		must(t, w.Append(b...))
		must(t, m.Append(b...))
	}
	crashed := copyDir(t, dir) // the WAL still open: no new snapshot
	w.Close()
	c := openWAL(t, crashed, 1024)
	defer c.Close()
	// The snapshot's last segment has grown since; it and the three new
	// ones are read again.
	if c.scanned != 4 {
		t.Fatalf("read %d segments, want 4 (the snapshot's last and the 3 after it)", c.scanned)
	}
	sameLog(t, c, m)
	checkSegments(t, c)
}

// Damage in a segment the snapshot vouches for is found by the read that
// reaches it; the snapshot is then gone, so the next open finds it too.
func TestSnapshotDamageFoundByRead(t *testing.T) {
	dir, _ := buildLog(t, false)
	path := segmentFiles(t, dir)[0]
	data, err := os.ReadFile(path)
	must(t, err)
	data[batchAt(data, 0)+30] ^= 0x04
	must(t, os.WriteFile(path, data, 0o640))

	w := openWAL(t, dir, 1024)
	_, err = w.Read(0, 1<<20, w.LogEndOffset())
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Segment != path {
		t.Fatalf("read: %v, want a CorruptError in %s", err, path)
	}
	must(t, w.Close())
	if _, err := os.Stat(filepath.Join(dir, indexSnapshotFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshot still there after the damage was found: %v", err)
	}
	if l, err := OpenWAL(dir, WALOptions{SegmentBytes: 1024, NoSync: true}, quietLogger()); !errors.Is(err, ErrCorrupt) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("reopen: %v, want ErrCorrupt", err)
	}
}

// A snapshot that does not decode is ignored: the log is read in full.
func TestSnapshotGarbageIgnored(t *testing.T) {
	dir, m := buildLog(t, false)
	snap := filepath.Join(dir, indexSnapshotFile)
	data, err := os.ReadFile(snap)
	must(t, err)
	for _, bad := range [][]byte{nil, data[:len(data)/2], append([]byte("x"), data[1:]...)} {
		must(t, os.WriteFile(snap, bad, 0o640))
		w := openWAL(t, dir, 1024)
		if w.scanned != len(w.segs) {
			t.Fatalf("read %d of %d segments with a bad snapshot", w.scanned, len(w.segs))
		}
		sameLog(t, w, m)
		w.Close()
		must(t, os.WriteFile(snap, bad, 0o640)) // Close wrote a good one
	}
}

// FuzzDecodeSnapshot: any bytes decode to an error or a snapshot whose
// segments start at its first index; never a panic.
func FuzzDecodeSnapshot(f *testing.F) {
	dir := f.TempDir()
	w, err := OpenWAL(dir, WALOptions{SegmentBytes: 1024, NoSync: true}, quietLogger())
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if err := w.Append(mkBatches(w.LogEndOffset(), recs(1+i%3)...)...); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(w.encodeSnapshot())
	w.Close()
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeSnapshot(data)
		if err == nil && (len(s.segs) == 0 || s.segs[0] != s.first || len(s.sizes) != len(s.segs)) {
			t.Fatalf("decoded an inconsistent snapshot: %+v", s)
		}
	})
}
