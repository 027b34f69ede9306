package storage

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Log is one partition replica's log of record batches (Kafka RecordBatch v2
// bytes, see messages/record). Offsets start at 0 and grow by the record
// count of each batch. A Log is not safe for concurrent use: its owner (the
// partition actor) serialises every call.
type Log interface {
	// Append durably appends whole batches (one write and one fsync for all of
	// them) and returns only once they are on disk. Each batch must pass
	// record.CheckCRC, hold at least one offset, have its base offset equal to
	// the LEO at its turn and a leader epoch no lower than the previous
	// batch's (so that the epoch cache below is well defined); an error leaves
	// the log unchanged in memory and, after ErrLogFailed, unusable.
	Append(batches ...[]byte) error

	// Write is Append without waiting for the disk: the batches are in the
	// log (Read returns them, the LEO moves) but may not survive a crash
	// until a function from SyncFunc has returned.
	Write(batches ...[]byte) error
	// SyncFunc returns a function that makes everything written so far
	// durable. The function may run on another goroutine, concurrently with
	// later calls on the log; it covers only what was written before
	// SyncFunc was called.
	SyncFunc() func() error

	// Read returns whole batches in offset order, starting with the batch that
	// contains offset and ending before the first batch whose base offset is at
	// or above maxOffset, totalling at most maxBytes except that the first batch
	// is always returned whole. It returns (nil, nil) when offset >= maxOffset
	// or offset == LEO. Offsets below LogStartOffset or above LEO give
	// ErrOffsetOutOfRange. Every batch read is CRC-checked; a mismatch gives an
	// error wrapping ErrCorrupt. The returned slices must not be modified; they
	// stay valid after later calls.
	Read(offset int64, maxBytes int, maxOffset int64) ([][]byte, error)

	// LogStartOffset is the first offset still in the log.
	LogStartOffset() int64
	// LogEndOffset (LEO) is the offset the next appended record will get.
	LogEndOffset() int64
	// Size is the number of bytes of batch data held.
	Size() int64

	// TruncateTo removes every batch that holds an offset >= offset, so the
	// LEO becomes the base offset of the first removed batch (offset itself
	// when it is a batch boundary). offset may equal LogStartOffset, which
	// empties the log; the LEO then stays at that offset.
	TruncateTo(offset int64) error

	// DeleteBefore removes whole stored units (segments for the WAL log,
	// batches in memory) that hold only offsets < offset. The log start
	// offset moves forward to the first offset still held, or to offset when
	// the log becomes empty (offset <= LEO required).
	DeleteBefore(offset int64) error

	// Reset empties the log and moves it to offset (>= LEO): the start
	// offset and LEO both become offset. A follower whose log ends before its
	// leader's log start uses it to start over there.
	Reset(offset int64) error

	// ApplyRetention deletes from the front what is older than maxAge (by a
	// batch's max timestamp, compared to now) or beyond maxBytes in total,
	// never anything at or above maxOffset (pass the high watermark). A zero
	// or negative limit disables that rule. It returns the new log start offset.
	ApplyRetention(now time.Time, maxBytes int64, maxAge time.Duration, maxOffset int64) (int64, error)

	// OffsetForTimestamp returns the offset and timestamp of the first record
	// with timestamp >= ts, or ok=false when there is none.
	OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool, err error)
	// MaxTimestamp returns the largest timestamp of the records below
	// offset below and the offset of the first record carrying it, or
	// ok=false when there is no record below it (ListOffsets' -3, KIP-734).
	MaxTimestamp(below int64) (offset int64, timestamp int64, ok bool, err error)

	// Epochs is the leader-epoch cache: for each leader epoch (>= 0; -1 means
	// none) that wrote batches, the offset of its first batch, in increasing
	// order. It is
	// derived from the batches' leader epochs and follows truncation.
	Epochs() []EpochStart
	// EndOffsetForEpoch answers a follower's epoch query (KIP-101/279): the
	// largest epoch <= epoch present in the cache, and the start offset of the
	// next larger epoch (the LEO if there is none). ok is false when epoch is
	// below every cached epoch.
	EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64, ok bool)

	// Close releases the log. It does not need to fsync: every Append already did.
	Close() error
}

// EpochStart is one entry of the leader-epoch cache.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// EpochAt is the leader epoch in force at offset in a log whose epoch cache
// is epochs (the last that starts at or before it; Kafka's epochForOffset),
// and false when none does.
func EpochAt(epochs []EpochStart, offset int64) (int32, bool) {
	i := sort.Search(len(epochs), func(i int) bool { return epochs[i].StartOffset > offset }) - 1
	if i < 0 {
		return -1, false
	}
	return epochs[i].Epoch, true
}

// Errors of the storage package.
var (
	// ErrOffsetOutOfRange: the offset is below the log start or above the LEO.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrCorrupt: stored bytes failed their CRC or framing check.
	ErrCorrupt = errors.New("log corrupt")
	// ErrLogFailed: an I/O error left the log in an unknown state; reopen it.
	ErrLogFailed = errors.New("log failed; reopen to recover")
	// ErrBadAppend: a batch did not continue the log (wrong base offset or CRC).
	ErrBadAppend = errors.New("batch does not continue the log")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("log closed")
)

// CorruptError says where stored bytes failed a check. It wraps ErrCorrupt
// and the underlying cause.
type CorruptError struct {
	Segment string // segment file path
	Pos     int64  // byte position in the segment file, -1 when unknown
	Offset  int64  // log offset expected there
	Err     error  // what was wrong
}

func (e *CorruptError) Error() string {
	where := e.Segment
	if e.Pos >= 0 {
		where += fmt.Sprintf(" byte %d", e.Pos)
	}
	return fmt.Sprintf("%v: %s (offset %d): %v", ErrCorrupt, where, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
