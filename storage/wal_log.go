package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage/syncjournal"
	"github.com/tidwall/wal"
)

// WALOptions configure OpenWAL.
type WALOptions struct {
	// SegmentBytes is the target size of a segment file, the unit that
	// DeleteBefore and retention remove. Default DefaultSegmentBytes.
	SegmentBytes int
	// NoSync skips every fsync. For tests and benchmarks only.
	NoSync bool
}

// DefaultSegmentBytes is the default segment size. tidwall/wal keeps the
// segment being written in memory, as one slice that append grows (and so
// copies) many times over before the segment is full, and fsyncs a segment
// in the writer when it starts the next one. Small segments keep that slice
// cheap to grow while the fsync per segment stays rare enough: writing 1 MiB
// groups ran at 190 MB/s with 4 MiB segments against 75 MB/s with 64 MiB
// ones on a 2-core machine (go test -bench WriteThroughSegments ./storage),
// and a partition holds at most 3 segments in memory (the one being
// written and wal's cache of 2).
const DefaultSegmentBytes = 4 << 20

// metaFile holds the log start offset (= LEO) while the WAL is empty; it is
// ignored while the WAL holds batches, whose first base offset is the start.
const metaFile = "logstart.checkpoint"

// WALLog is a Log stored in a tidwall/wal directory, one WAL entry per batch.
// WAL indexes (from 1) are not offsets: the batch at position i of the
// in-memory index is WAL entry first+i.
type WALLog struct {
	dir    string
	opts   WALOptions
	logger *slog.Logger
	wal    *wal.Log
	x      index
	first  uint64   // WAL index of x.batches[0], or the next one when empty
	segs   []uint64 // first WAL index of each segment file, oldest first
	tail   int      // bytes in the last segment file
	wb     wal.Batch
	hdrs   []record.Header
	failed error // sticky: set when wal's state may no longer match ours
	closed bool
}

var _ Log = (*WALLog)(nil)

// OpenWAL opens or creates the log in dir. It repairs a torn tail left by a
// crash (logging a warning) and fails with an error wrapping ErrCorrupt if
// any other stored byte is wrong.
func OpenWAL(dir string, opts WALOptions, logger *slog.Logger) (*WALLog, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &WALLog{dir: dir, opts: opts, logger: logger}
	wopts := &wal.Options{
		// wal would fsync inside every WriteBatch, holding its lock; the
		// log fsyncs the tail segment itself (SyncFunc), so that a sync can
		// overlap the next write.
		NoSync:      true,
		SegmentSize: opts.SegmentBytes,
		NoCopy:      true, // Read returns wal's buffers; wal only appends to them or drops them
		AllowEmpty:  true,
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	if err := prepareDir(dir, wopts); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	segs, tail, err := w.scanSegments()
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	w.segs, w.tail = segs, tail
	if len(w.x.batches) == 0 {
		start, _, err := ReadCheckpoint(filepath.Join(dir, metaFile))
		if err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
		w.x.reset(start)
	}
	if w.wal, err = wal.Open(dir, wopts); err != nil {
		if errors.Is(err, wal.ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	// Our scan and wal's load must agree on the indexes.
	first, _ := w.wal.FirstIndex()
	last, _ := w.wal.LastIndex()
	if first != w.segs[0] || last+1 != w.first+uint64(len(w.x.batches)) {
		w.wal.Close()
		return nil, fmt.Errorf("storage: open %s: %w: wal holds indexes [%d, %d], scan found %d entries from %d",
			dir, ErrCorrupt, first, last, len(w.x.batches), w.first)
	}
	// wal never fsyncs the directory: make the segment files it created
	// (and the directory itself) durable before the first Append.
	err = w.syncDir()
	if err == nil && !opts.NoSync {
		err = syncDir(filepath.Dir(filepath.Clean(dir)))
	}
	if err != nil {
		w.wal.Close()
		return nil, err
	}
	return w, nil
}

// journalSegment records a segment wal rewrote and fsync'd as durable in
// full: the last one (last) or the first one.
func (w *WALLog) journalSegment(last bool) {
	if !syncjournal.Enabled() || len(w.segs) == 0 {
		return
	}
	idx := w.segs[0]
	if last {
		idx = w.segs[len(w.segs)-1]
	}
	syncjournal.SyncedFile(filepath.Join(w.dir, segmentName(idx)))
}

// usable returns the error every call gets after Close or a failure.
func (w *WALLog) usable() error {
	switch {
	case w.closed:
		return ErrClosed
	case w.failed != nil:
		return fmt.Errorf("%w: %w", ErrLogFailed, w.failed)
	}
	return nil
}

// fail makes err sticky: wal's files or in-memory state may now differ from
// ours, and only reopening rebuilds both from disk.
func (w *WALLog) fail(err error) error {
	w.failed = err
	return fmt.Errorf("%w: %w", ErrLogFailed, err)
}

func (w *WALLog) syncDir() error {
	if w.opts.NoSync {
		return nil
	}
	return syncDir(w.dir)
}

// writeMeta records the start offset an empty WAL will have. It runs before
// the WAL is emptied, so a crash at any point leaves either the entries
// (which win) or an empty WAL and the right offset.
func (w *WALLog) writeMeta(start int64) error {
	return writeCheckpoint(filepath.Join(w.dir, metaFile), start, !w.opts.NoSync)
}

func (w *WALLog) Append(batches ...[]byte) error {
	if err := w.Write(batches...); err != nil {
		return err
	}
	if err := w.SyncFunc()(); err != nil {
		return w.fail(fmt.Errorf("append: %w", err))
	}
	return nil
}

// SyncFunc fsyncs the segment being written through a duplicate of its
// file descriptor, so that it can run while the next Write goes on. Older
// segments need nothing: wal fsyncs a segment when it starts the next one.
func (w *WALLog) SyncFunc() func() error {
	if err := w.usable(); err != nil {
		return func() error { return err }
	}
	if w.opts.NoSync {
		return noSync
	}
	path := filepath.Join(w.dir, fmt.Sprintf("%020d", w.segs[len(w.segs)-1]))
	f, err := os.Open(path)
	if err != nil {
		return func() error { return fmt.Errorf("sync %s: %w", path, err) }
	}
	var info os.FileInfo
	if syncjournal.Enabled() {
		info, _ = f.Stat()
	}
	return func() error {
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
		if info != nil {
			syncjournal.Synced(path, info, info.Size())
		}
		return nil
	}
}

func noSync() error { return nil }

func (w *WALLog) Write(batches ...[]byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if len(batches) == 0 {
		return nil
	}
	hdrs, err := w.x.check(batches, w.hdrs[:0])
	w.hdrs = hdrs
	if err != nil {
		return err
	}
	w.wb.Clear()
	next := w.first + uint64(len(w.x.batches))
	for i, b := range batches {
		w.wb.Write(next+uint64(i), b)
	}
	if err := w.wal.WriteBatch(&w.wb); err != nil {
		return w.fail(fmt.Errorf("append: %w", err))
	}
	lastBefore := len(w.segs) - 1
	cycled := w.noteAppend(next, batches)
	if cycled {
		// wal fsyncs a segment in full before it starts the next one.
		for _, idx := range w.segs[lastBefore : len(w.segs)-1] {
			syncjournal.SyncedFile(filepath.Join(w.dir, segmentName(idx)))
		}
	}
	for _, h := range hdrs {
		w.x.push(h)
	}
	if cycled {
		if err := w.syncDir(); err != nil {
			return w.fail(fmt.Errorf("append: %w", err))
		}
	}
	return nil
}

// entrySize is the size of a wal binary entry holding n bytes.
func entrySize(n int) int {
	size := n + 1
	for u := uint64(n); u >= 0x80; u >>= 7 {
		size++
	}
	return size
}

// noteAppend mirrors wal.writeBatch's segment cycling (v1.2.1) so that segs
// matches the files without listing the directory: a new segment starts
// before the batch if the tail is already over the target size, and after
// every entry that brings it to the target size. It reports whether a new
// segment file was created.
func (w *WALLog) noteAppend(next uint64, batches [][]byte) bool {
	size, cycled := w.opts.SegmentBytes, false
	if w.tail > size {
		w.segs, w.tail, cycled = append(w.segs, next), 0, true
	}
	for i, b := range batches {
		if w.tail += entrySize(len(b)); w.tail >= size {
			w.segs, w.tail, cycled = append(w.segs, next+uint64(i)+1), 0, true
		}
	}
	return cycled
}

// segment returns the position in segs of the segment holding WAL index i.
func (w *WALLog) segment(i uint64) int {
	return sort.Search(len(w.segs), func(s int) bool { return w.segs[s] > i }) - 1
}

// segmentEnd returns the position just past the segment holding position i.
func (w *WALLog) segmentEnd(i int) int {
	if s := w.segment(w.first+uint64(i)) + 1; s < len(w.segs) {
		return int(w.segs[s] - w.first)
	}
	return len(w.x.batches)
}

func (w *WALLog) Read(offset int64, maxBytes int, maxOffset int64) ([][]byte, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	i, j, err := w.x.readRange(offset, maxBytes, maxOffset)
	if err != nil || i == j {
		return nil, err
	}
	out := make([][]byte, j-i)
	for k := range out {
		if out[k], err = w.batch(i + k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batch reads the batch at position i and checks it is intact and the one
// the index expects.
func (w *WALLog) batch(i int) ([]byte, error) {
	bi, idx := &w.x.batches[i], w.first+uint64(i)
	b, err := w.readEntry(idx)
	if err != nil && !errors.Is(err, wal.ErrCorrupt) {
		return nil, fmt.Errorf("storage: read offset %d: %w", bi.base, err)
	}
	if err == nil {
		var h record.Header
		if h, err = record.CheckCRC(b); err == nil && (h.BaseOffset != bi.base || len(b) != int(bi.size)) {
			err = fmt.Errorf("WAL entry %d holds offset %d (%d bytes), want offset %d (%d bytes)",
				idx, h.BaseOffset, len(b), bi.base, bi.size)
		}
	}
	if err != nil {
		seg := filepath.Join(w.dir, segmentName(w.segs[w.segment(idx)]))
		return nil, &CorruptError{Segment: seg, Pos: -1, Offset: bi.base, Err: err}
	}
	return b[:len(b):len(b)], nil
}

// readEntry is wal.Read, except that a panic is returned as wal.ErrCorrupt:
// wal indexes its position table without bounds checks, so a segment file
// whose framing was damaged after open can panic it. Read holds only a read
// lock, released by its defer, and changes nothing but its cache.
func (w *WALLog) readEntry(idx uint64) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%w: %v", wal.ErrCorrupt, r)
		}
	}()
	return w.wal.Read(idx)
}

func (w *WALLog) LogStartOffset() int64 { return w.x.start }
func (w *WALLog) LogEndOffset() int64   { return w.x.leo }
func (w *WALLog) Size() int64           { return w.x.size }

func (w *WALLog) TruncateTo(offset int64) error {
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
	if n == 0 {
		if err := w.writeMeta(w.x.start); err != nil {
			return err // nothing changed yet
		}
	}
	if err := w.wal.TruncateBack(w.first + uint64(n) - 1); err != nil {
		return w.fail(fmt.Errorf("truncate: %w", err))
	}
	defer w.journalSegment(true) // wal rewrote the new last segment, fsync'd, and renamed it
	// wal keeps the segments up to the one holding the new last entry (the
	// first segment when empty), that one holding entries up to it.
	s := 0
	if n > 0 {
		s = w.segment(w.first + uint64(n) - 1)
	}
	w.segs, w.tail = w.segs[:s+1], 0
	for i := int(w.segs[s] - w.first); i < n; i++ {
		w.tail += entrySize(int(w.x.batches[i].size))
	}
	w.x.truncate(n)
	if err := w.syncDir(); err != nil {
		return w.fail(fmt.Errorf("truncate: %w", err))
	}
	return nil
}

func (w *WALLog) DeleteBefore(offset int64) error {
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
	all := n == len(w.x.batches)
	if all {
		if err := w.writeMeta(w.x.leo); err != nil {
			return err // nothing changed yet
		}
	}
	// At a segment's first index wal deletes the older segment files, but it
	// also rewrites that segment as a copy (NAME.START) before renaming it.
	idx := w.first + uint64(n)
	if err := w.wal.TruncateFront(idx); err != nil {
		return w.fail(fmt.Errorf("delete: %w", err))
	}
	if all {
		w.segs, w.tail = []uint64{idx}, 0 // one empty segment named after the next index
	} else {
		w.segs = w.segs[w.segment(idx):]
	}
	w.first = idx
	w.x.dropFront(n)
	w.journalSegment(false) // wal rewrote the new first segment, fsync'd, and renamed it
	if err := w.syncDir(); err != nil {
		return w.fail(fmt.Errorf("delete: %w", err))
	}
	return nil
}

func (w *WALLog) OffsetForTimestamp(ts int64) (int64, int64, bool, error) {
	if err := w.usable(); err != nil {
		return 0, 0, false, err
	}
	return w.x.offsetForTimestamp(ts, w.batch)
}

func (w *WALLog) Epochs() []EpochStart { return w.x.epochsCopy() }

func (w *WALLog) EndOffsetForEpoch(epoch int32) (int32, int64, bool) {
	return w.x.endOffsetForEpoch(epoch)
}

// Close closes the WAL; a second Close does nothing.
func (w *WALLog) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.wal.Close()
}
