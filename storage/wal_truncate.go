package storage

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluicemq/sluice/storage/syncjournal"
	"github.com/tidwall/wal"
)

// Removing records from a WAL log: truncation at the end, deletion and
// retention at the front, and a reset to an empty log at an offset.

func (w *WALLog) TruncateTo(offset int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if offset < w.x.start || offset > w.x.leo {
		return fmt.Errorf("%w: truncate to %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, w.x.start, w.x.leo)
	}
	n := w.x.find(offset) // batches kept
	if n == len(w.x.batches) {
		return nil
	}
	if err := w.open(); err != nil {
		return err
	}
	// wal rewrites the last kept segment under its old name: later writes
	// could bring it back to a size the snapshot would take as unchanged.
	if err := w.removeSnapshot(); err != nil {
		return err // nothing changed yet
	}
	w.snapDirty = true
	if n == 0 {
		if err := w.writeMeta(w.x.start); err != nil {
			return err // nothing changed yet
		}
	}
	// wal keeps the segments up to the one holding the new last entry (the
	// first segment when empty), that one holding entries up to it.
	s, tail := 0, 0
	if n > 0 {
		s = w.segment(w.first + uint64(n) - 1)
	}
	for i := int(w.segs[s] - w.first); i < n; i++ {
		tail += entrySize(int(w.x.batches[i].size))
	}
	if err := w.journalRewrite(w.segs[s], ".END", tail); err != nil {
		return err // nothing changed yet
	}
	if err := w.wal.TruncateBack(w.first + uint64(n) - 1); err != nil {
		return w.fail(fmt.Errorf("truncate: %w", err))
	}
	if w.walTruncated != nil {
		if err := w.walTruncated(); err != nil {
			return w.fail(fmt.Errorf("truncate: %w", err))
		}
	}
	w.segs, w.tail = w.segs[:s+1], tail
	w.x.truncate(n)
	if err := w.syncDir(); err != nil {
		return w.fail(fmt.Errorf("truncate: %w", err))
	}
	return nil
}

func (w *WALLog) DeleteBefore(offset int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if offset > w.x.leo {
		return fmt.Errorf("%w: delete before %d, LEO is %d", ErrOffsetOutOfRange, offset, w.x.leo)
	}
	n := w.x.find(offset) // batches holding only offsets < offset
	if n < len(w.x.batches) {
		// Keep the segment holding batch n: back up to its first batch.
		n = int(w.segs[w.segment(w.first+uint64(n))] - w.first)
	}
	return w.dropFront(n)
}

func (w *WALLog) Reset(offset int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if offset < w.x.leo {
		return fmt.Errorf("%w: reset to %d, below the LEO %d", ErrOffsetOutOfRange, offset, w.x.leo)
	}
	if n := len(w.x.batches); n > 0 {
		if err := w.dropFront(n); err != nil {
			return err
		}
	}
	// A crash before this write reopens the log empty at the old LEO, which
	// is still below offset: the caller simply resets again.
	if err := w.writeMeta(offset); err != nil {
		return err
	}
	w.x.reset(offset)
	return nil
}

func (w *WALLog) ApplyRetention(now time.Time, maxBytes int64, maxAge time.Duration, maxOffset int64) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return w.x.start, err
	}
	err := w.dropFront(w.x.retentionCut(now, maxBytes, maxAge, maxOffset, w.segmentEnd))
	return w.x.start, err
}

// dropFront deletes the first n batches: every batch, or whole segments (n
// is then the position of a segment's first batch).
func (w *WALLog) dropFront(n int) error {
	if n == 0 {
		return nil
	}
	if err := w.open(); err != nil {
		return err
	}
	w.snapDirty = true
	all := n == len(w.x.batches)
	if all {
		if err := w.writeMeta(w.x.leo); err != nil {
			return err // nothing changed yet
		}
	}
	// At a segment's first index wal deletes the older segment files, but it
	// also rewrites that segment as a copy (NAME.START) before renaming it.
	idx := w.first + uint64(n)
	size := 0 // wal keeps the rest of the segment holding idx
	if !all {
		for _, bi := range w.x.batches[n:w.segmentEnd(n)] {
			size += entrySize(int(bi.size))
		}
	}
	if err := w.journalRewrite(idx, ".START", size); err != nil {
		return err // nothing changed yet
	}
	if err := w.wal.TruncateFront(idx); err != nil {
		return w.fail(fmt.Errorf("delete: %w", err))
	}
	if w.walTruncated != nil {
		if err := w.walTruncated(); err != nil {
			return w.fail(fmt.Errorf("delete: %w", err))
		}
	}
	if all {
		w.segs, w.tail = []uint64{idx}, 0 // one empty segment named after the next index
	} else {
		w.segs = w.segs[w.segment(idx):]
	}
	w.first = idx
	w.x.dropFront(n)
	if err := w.syncDir(); err != nil {
		return w.fail(fmt.Errorf("delete: %w", err))
	}
	return nil
}

// journalRewrite records in the sync journal, before wal rewrites the
// segment named after WAL index seg, that the new file will be durable to
// size once it is in place: wal writes it as NAME+suffix+".TEMP" (opening
// the file created here with O_TRUNC, so the inode recorded is the one it
// writes), fsyncs it, and renames it to NAME+suffix and then to NAME, all
// inside the call. Recorded once the call returned, a kill in between left
// the journal behind the disk, and the simulated power loss emptied the
// rewritten segment: entries before a TruncateTo's cut were lost, and a
// DeleteBefore that kept only the last segment left an empty log at
// offset 0.
func (w *WALLog) journalRewrite(seg uint64, suffix string, size int) error {
	name := filepath.Join(w.dir, segmentName(seg))
	return syncjournal.SyncedBeforeRename(name+suffix+".TEMP", name, int64(size), wal.DefaultOptions.FilePerms)
}
