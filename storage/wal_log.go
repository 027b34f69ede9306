package storage

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
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
	// Pool, when set, bounds the memory of the broker's open logs: it
	// closes this log's WAL when the budget needs it or the log is idle
	// (the log reopens it on its next use) and caps its segment size.
	Pool *Pool
}

// DefaultSegmentBytes is the default segment size. tidwall/wal keeps the
// segment being written in memory, in one buffer grown once to a whole
// segment (third_party/tidwall/wal; the release grew it by append, copying
// each segment about five times), and fsyncs a segment in the writer when
// it starts the next one. Writing 1 MiB groups without fsync runs at about
// 540, 640, 710 and 860 MB/s with 1, 4, 16 and 64 MiB segments on a 2-core
// machine (go test -bench WriteThroughSegments ./storage; the release: 330,
// 220, 260, 87). 4 MiB keeps a partition's memory small: it holds at most
// 2 segments (the one being written and one older one after a read), and
// a Pool caps it further.
const DefaultSegmentBytes = 4 << 20

// metaFile holds the log start offset (= LEO) while the WAL is empty; it is
// ignored while the WAL holds batches, whose first base offset is the start.
const metaFile = "logstart.checkpoint"

// WALLog is a Log stored in a tidwall/wal directory, one WAL entry per batch.
// WAL indexes (from 1) are not offsets: the batch at position i of the
// in-memory index is WAL entry first+i.
//
// The wal.Log itself is open only while the log is in use (wal is nil
// otherwise): the index here is enough to answer everything but reads and
// writes, which reopen it. mu serialises the owner's calls with the pool
// closing the WAL; only the owner changes the index, so the owner's reads
// of it need no lock.
type WALLog struct {
	mu       sync.Mutex
	dir      string
	opts     WALOptions
	logger   *slog.Logger
	wal      *wal.Log
	segBytes int // segment size of the open WAL
	x        index
	first    uint64   // WAL index of x.batches[0], or the next one when empty
	segs     []uint64 // first WAL index of each segment file, oldest first
	tail     int      // bytes in the last segment file
	// tailWritten: this WAL appended to its tail, which then holds a
	// buffer of a whole segment (wal reserves it at the first append).
	tailWritten bool
	hdrs        []record.Header
	// dirDirty: a segment file was created since the last sync, so the
	// next one fsyncs the directory too.
	dirDirty bool
	// cachedSeg is the older segment wal keeps in memory after a read
	// (0: none), cachedBytes its size.
	cachedSeg   uint64
	cachedBytes int64
	// snapDirty: the index changed since the snapshot file was written;
	// corrupt: a read found damage, so no snapshot is written again.
	snapDirty bool
	corrupt   bool
	opens     int   // times the WAL was opened
	scanned   int   // segments read by OpenWAL (the others came from the snapshot)
	failed    error // sticky: set when wal's state may no longer match ours
	closed    bool
	// walTruncated is a test seam: when set, it runs as soon as wal has
	// truncated the log, and an error stops the truncation there, as a
	// kill would (wal has no step after its rename that a test could make
	// fail).
	walTruncated func() error

	// Guarded by the pool's lock.
	poolElem  *list.Element
	poolBytes int64
	poolUsed  time.Time
}

var _ Log = (*WALLog)(nil)

// OpenWAL opens or creates the log in dir. It repairs a torn tail left by a
// crash (logging a warning) and fails with an error wrapping ErrCorrupt if
// any other stored byte is wrong. Segments that the index snapshot of the
// last close still describes are not read again.
func OpenWAL(dir string, opts WALOptions, logger *slog.Logger) (*WALLog, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &WALLog{dir: dir, opts: opts, logger: logger, segBytes: opts.SegmentBytes}
	created := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	if err := prepareDir(dir, w.walOptions()); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	segs, tail, scanned, err := w.scanSegments(readIndexSnapshot(dir))
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	w.segs, w.tail, w.scanned = segs, tail, scanned
	if len(w.x.batches) == 0 {
		start, _, err := ReadCheckpoint(filepath.Join(dir, metaFile))
		if err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
		w.x.reset(start)
	}
	if opts.Pool != nil {
		opts.Pool.register()
	}
	if scanned == 0 && segmentExists(dir, w.segs[0]) {
		// Everything as the snapshot describes it: wal opens on first use.
		return w, nil
	}
	// A scanned log opens now, so that wal's view is checked against the
	// scan at once; a new one creates its first segment.
	w.snapDirty = true
	if err := w.ensureOpen(); err != nil {
		w.unregister()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	// wal never fsyncs the directory: make the segment files it created
	// (and the directory itself) durable before the first Append.
	err = w.syncDir()
	if err == nil && !opts.NoSync && created {
		err = syncDir(filepath.Dir(filepath.Clean(dir)))
	}
	if err != nil {
		w.closeWAL()
		w.unregister()
		return nil, err
	}
	return w, nil
}

func segmentExists(dir string, seg uint64) bool {
	_, err := os.Stat(filepath.Join(dir, segmentName(seg)))
	return err == nil
}

// walOptions are the options wal.Open gets.
func (w *WALLog) walOptions() *wal.Options {
	return &wal.Options{
		// wal would fsync inside every WriteBatch, holding its lock; the
		// log fsyncs the tail segment itself (TakeSync), so that a sync can
		// overlap the next write.
		NoSync:      true,
		SegmentSize: w.segBytes,
		// One older segment in memory for reads from the middle of the log.
		SegmentCacheSize: 1,
		NoCopy:           true, // Read returns wal's buffers; wal only appends to them or drops them
		AllowEmpty:       true,
	}
}

// ensureOpen opens the WAL if it is closed, with the segment size the pool
// allows now, and checks that wal's indexes match the log's.
func (w *WALLog) ensureOpen() error {
	if w.wal != nil {
		return nil
	}
	w.segBytes = w.opts.SegmentBytes
	if w.opts.Pool != nil {
		w.segBytes = min(w.segBytes, w.opts.Pool.segmentSize())
	}
	l, err := wal.Open(w.dir, w.walOptions())
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return err
	}
	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	if first != w.segs[0] || last+1 != w.first+uint64(len(w.x.batches)) {
		l.Close()
		return fmt.Errorf("%w: wal holds indexes [%d, %d], the index holds %d entries from %d",
			ErrCorrupt, first, last, len(w.x.batches), w.first)
	}
	w.wal = l
	if w.opts.Pool != nil && w.opens > 0 {
		w.opts.Pool.reopened()
	}
	w.opens++
	w.touch()
	return nil
}

// open is ensureOpen for the owner's calls: a failure makes the log failed.
func (w *WALLog) open() error {
	if err := w.ensureOpen(); err != nil {
		return w.fail(fmt.Errorf("reopen: %w", err))
	}
	return nil
}

// touch tells the pool the log was used and what it holds now: the tail
// segment (a whole segment's buffer and its eighth of room once written
// to, else what was loaded) and the cached one.
func (w *WALLog) touch() {
	if w.opts.Pool != nil && w.wal != nil {
		tail := int64(w.tail)
		if seg := int64(w.segBytes); w.tailWritten {
			tail = max(tail, seg+seg/8)
		}
		w.opts.Pool.used(w, tail+w.cachedBytes+w.cachedBytes/8, time.Now())
	}
}

// keepBudget closes other logs' WALs (or this one's) when the pool is over
// its budget, on the caller's goroutine: writers that outgrow the budget
// wait for it rather than run ahead of the pool's own goroutine. It runs
// after the call has released mu, so it holds no log's lock while it takes
// another's.
func (w *WALLog) keepBudget() {
	if p := w.opts.Pool; p != nil && p.over() {
		p.shed(time.Now())
	}
}

// hibernate closes the WAL of a log that is open and usable, and writes
// the index snapshot. The pool calls it; it reports whether it closed.
func (w *WALLog) hibernate() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wal == nil || w.closed || w.failed != nil {
		return false
	}
	err := w.closeWAL()
	if err == nil && w.dirDirty {
		// The next TakeSync of a closed log has nothing to do.
		err = w.syncDir()
	}
	if err != nil {
		// wal's close fsyncs the tail: what it held may not be on disk.
		w.fail(fmt.Errorf("close: %w", err))
		w.logger.Error("storage: closing an idle log failed", "dir", w.dir, "error", err)
		return false
	}
	w.dirDirty = false
	return true
}

// closeWAL closes the WAL (wal fsyncs the tail first) and, once that
// worked, writes the snapshot.
func (w *WALLog) closeWAL() error {
	if w.wal == nil {
		return nil
	}
	err := w.wal.Close()
	if err == nil {
		w.journalTail() // wal fsync'd the tail before closing it
	}
	w.wal, w.cachedSeg, w.cachedBytes, w.tailWritten = nil, 0, 0, false
	if w.opts.Pool != nil {
		w.opts.Pool.closed(w)
	}
	if err == nil && w.snapDirty && w.failed == nil && !w.corrupt {
		if serr := w.writeSnapshot(); serr != nil {
			w.logger.Warn("storage: writing the index snapshot", "dir", w.dir, "error", serr)
		} else {
			w.snapDirty = false
		}
	}
	return err
}

func (w *WALLog) unregister() {
	if w.opts.Pool != nil {
		w.opts.Pool.unregister(w)
	}
}

// journalTail records the last segment, which wal fsync'd, as durable in
// full.
func (w *WALLog) journalTail() {
	if !syncjournal.Enabled() || len(w.segs) == 0 {
		return
	}
	syncjournal.SyncedFile(filepath.Join(w.dir, segmentName(w.segs[len(w.segs)-1])))
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
	if err := w.TakeSync().Run(); err != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.fail(fmt.Errorf("append: %w", err))
	}
	return nil
}

// SyncFunc is TakeSync().Run.
func (w *WALLog) SyncFunc() func() error { return w.TakeSync().Run }

// TakeSync returns a Sync of the segment being written, through a
// descriptor of its own, so that it can run while the next Write goes on.
// Older segments need nothing: wal fsyncs a segment when it starts the
// next one, and when it closes.
func (w *WALLog) TakeSync() *Sync {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return &Sync{takeErr: err}
	}
	if w.opts.NoSync || w.wal == nil {
		// A closed WAL was fsync'd when it closed (or is as it was found).
		return &nothingToSync
	}
	path := filepath.Join(w.dir, segmentName(w.segs[len(w.segs)-1]))
	f, err := os.Open(path)
	if err != nil {
		return &Sync{takeErr: fmt.Errorf("sync %s: %w", path, err)}
	}
	s := &Sync{file: f, path: path}
	if syncjournal.Enabled() {
		if s.info, err = f.Stat(); err == nil {
			s.size = s.info.Size()
		}
	}
	if w.dirDirty {
		s.dir, w.dirDirty = w.dir, false
	}
	return s
}

// nothingToSync is the Sync of a log with nothing to make durable; Run
// only reads it.
var nothingToSync Sync

func (w *WALLog) Write(batches ...[]byte) error {
	defer w.keepBudget()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if len(batches) == 0 {
		return nil
	}
	if err := w.open(); err != nil {
		return err
	}
	hdrs, err := w.x.check(batches, w.hdrs[:0])
	w.hdrs = hdrs
	if err != nil {
		return err
	}
	wb := getBatch()
	defer putBatch(wb)
	next := w.first + uint64(len(w.x.batches))
	for i, b := range batches {
		wb.Write(next+uint64(i), b)
	}
	w.journalCycles(next, batches)
	if err := w.wal.WriteBatch(wb); err != nil {
		return w.fail(fmt.Errorf("append: %w", err))
	}
	w.tailWritten = true
	cycled := w.noteAppend(next, batches)
	for _, h := range hdrs {
		w.x.push(h)
	}
	if cycled {
		// wal keeps the segment it just finished in memory, as its cache.
		prev := len(w.segs) - 2
		w.cachedSeg, w.cachedBytes = w.segs[prev], w.segmentBytes(prev)
	}
	// A new segment file is durable only with its directory: the next
	// sync takes care of it.
	w.dirDirty = w.dirDirty || cycled
	w.snapDirty = true
	w.touch()
	return nil
}

// WriteWaits reports whether a Write of batches would wait on the disk
// rather than only copy them into the page cache: when it starts a new
// segment (wal fsyncs and closes the one it ends, and creates the next),
// when it reopens a log the pool closed, or when the pool is over its
// budget (the write then closes other logs). An owner that must not block
// runs such a write beside itself.
func (w *WALLog) WriteWaits(batches ...[]byte) bool {
	if p := w.opts.Pool; p != nil && p.over() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wal == nil {
		return !w.closed && w.failed == nil
	}
	return w.rolls(batches)
}

// rolls reports whether appending batches starts a new segment (as
// noteAppend counts it).
func (w *WALLog) rolls(batches [][]byte) bool {
	tail := w.tail
	if tail > w.segBytes {
		return true
	}
	for _, b := range batches {
		if tail += entrySize(len(b)); tail >= w.segBytes {
			return true
		}
	}
	return false
}

// walBatches are the write buffers shared by every log: a wal.Batch keeps
// a copy of what it last wrote, and one per log would keep a copy of every
// log's last write. A few are kept, for the writes that run at once.
var walBatches = make(chan *wal.Batch, 8)

func getBatch() *wal.Batch {
	select {
	case b := <-walBatches:
		return b
	default:
		return new(wal.Batch)
	}
}

func putBatch(b *wal.Batch) {
	b.Clear()
	select {
	case walBatches <- b:
	default:
	}
}

// entrySize is the size of a wal binary entry holding n bytes.
func entrySize(n int) int {
	size := n + 1
	for u := uint64(n); u >= 0x80; u >>= 7 {
		size++
	}
	return size
}

// cycles mirrors wal.writeBatch's segment cycling (v1.2.1) for appending
// batches from WAL index next: a new segment starts before the batch if the
// tail is already over the target size, and after every entry that brings
// it to the target size. It calls cycle with the size of each segment
// finished and the first index of the one started, and returns the size of
// the tail after.
func (w *WALLog) cycles(next uint64, batches [][]byte, cycle func(size int, start uint64)) int {
	tail, size := w.tail, w.segBytes
	if tail > size {
		cycle(tail, next)
		tail = 0
	}
	for i, b := range batches {
		if tail += entrySize(len(b)); tail >= size {
			cycle(tail, next+uint64(i)+1)
			tail = 0
		}
	}
	return tail
}

// noteAppend follows the cycling of an append so that segs matches the
// files without listing the directory. It reports whether a new segment
// file was created.
func (w *WALLog) noteAppend(next uint64, batches [][]byte) bool {
	cycled := false
	w.tail = w.cycles(next, batches, func(_ int, start uint64) {
		w.segs, cycled = append(w.segs, start), true
	})
	return cycled
}

// journalCycles records, before wal writes batches, every segment the write
// will finish as durable in full once the next one exists: wal fsyncs a
// segment before it creates the next, inside WriteBatch, and a record made
// after it returned would leave a kill in between with the new segment on
// disk and the finished one cut short by the simulated power loss, a gap
// no real crash leaves.
func (w *WALLog) journalCycles(next uint64, batches [][]byte) {
	if !syncjournal.Enabled() {
		return
	}
	seg := w.segs[len(w.segs)-1]
	w.cycles(next, batches, func(size int, start uint64) {
		syncjournal.SyncedBeforeCreate(filepath.Join(w.dir, segmentName(seg)), int64(size),
			filepath.Join(w.dir, segmentName(start)))
		seg = start
	})
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
	defer w.keepBudget()
	w.mu.Lock()
	defer w.mu.Unlock()
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
	w.touch()
	return out, nil
}

// batch reads the batch at position i and checks it is intact and the one
// the index expects. The caller holds mu.
func (w *WALLog) batch(i int) ([]byte, error) {
	if err := w.open(); err != nil {
		return nil, err
	}
	bi, idx := &w.x.batches[i], w.first+uint64(i)
	if s := w.segment(idx); s < len(w.segs)-1 && w.segs[s] != w.cachedSeg {
		// wal loads this older segment whole and keeps it instead of the
		// one it kept before.
		w.cachedSeg, w.cachedBytes = w.segs[s], w.segmentBytes(s)
	}
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
		// The next open must read every segment again, not trust the
		// snapshot for the damaged one.
		if rerr := os.Remove(filepath.Join(w.dir, indexSnapshotFile)); rerr == nil || errors.Is(rerr, os.ErrNotExist) {
			w.corrupt = true
		}
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

func (w *WALLog) OffsetForTimestamp(ts int64) (int64, int64, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return 0, 0, false, err
	}
	return w.x.offsetForTimestamp(ts, w.batch)
}

func (w *WALLog) MaxTimestamp(below int64) (int64, int64, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return 0, 0, false, err
	}
	return w.x.maxTimestamp(below, w.batch)
}

func (w *WALLog) Epochs() []EpochStart { return w.x.epochsCopy() }

func (w *WALLog) EndOffsetForEpoch(epoch int32) (int32, int64, bool) {
	return w.x.endOffsetForEpoch(epoch)
}

// Close closes the WAL and writes the index snapshot; a second Close does
// nothing.
func (w *WALLog) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.closeWAL()
	w.closed = true
	w.unregister()
	return err
}
