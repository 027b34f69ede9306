package storage

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sluicemq/sluice/messages/record"
)

// batchInfo is what the in-memory index keeps of one stored batch.
type batchInfo struct {
	base, last int64 // first and last offset
	maxTS      int64
	size       int32
	epoch      int32
}

// index is the in-memory view of a log shared by MemLog and WALLog: the
// batches in offset order, the offsets and size, and the leader-epoch cache.
// Both logs keep their data in step with it, position for position.
type index struct {
	batches []batchInfo
	start   int64 // log start offset; batches[0].base when not empty
	leo     int64
	size    int64
	epochs  []EpochStart
}

// reset empties the index at offset.
func (x *index) reset(offset int64) {
	x.batches = x.batches[:0]
	x.start, x.leo, x.size = offset, offset, 0
	x.epochs = nil
}

// lastEpoch is the leader epoch of the last batch, MinInt32 when empty.
func (x *index) lastEpoch() int32 {
	if n := len(x.batches); n > 0 {
		return x.batches[n-1].epoch
	}
	return math.MinInt32
}

// checkNext checks that b is a whole batch that may follow a log ending at
// next whose last batch has leader epoch epoch.
func checkNext(b []byte, next int64, epoch int32) (record.Header, error) {
	h, err := record.CheckCRC(b)
	if err != nil {
		return h, err
	}
	return h, follows(h, next, epoch)
}

// follows checks the offsets and epoch of a batch header against the end of
// the log it continues.
func follows(h record.Header, next int64, epoch int32) error {
	switch {
	case h.LastOffsetDelta < 0:
		return fmt.Errorf("last offset delta %d", h.LastOffsetDelta)
	case h.BaseOffset != next:
		return fmt.Errorf("base offset %d, want %d", h.BaseOffset, next)
	case h.LeaderEpoch < epoch:
		return fmt.Errorf("leader epoch %d after epoch %d", h.LeaderEpoch, epoch)
	}
	return nil
}

// check validates batches as one Append takes them, appending their headers
// to dst. It does not change x.
func (x *index) check(batches [][]byte, dst []record.Header) ([]record.Header, error) {
	next, epoch := x.leo, x.lastEpoch()
	for i, b := range batches {
		h, err := checkNext(b, next, epoch)
		if err != nil {
			return dst, fmt.Errorf("%w: batch %d of %d: %w", ErrBadAppend, i, len(batches), err)
		}
		dst = append(dst, h)
		next, epoch = h.NextOffset(), h.LeaderEpoch
	}
	return dst, nil
}

// push adds a batch that passed checkNext.
func (x *index) push(h record.Header) {
	x.pushInfo(batchInfo{
		base: h.BaseOffset, last: h.LastOffset(), maxTS: h.MaxTimestamp,
		size: int32(h.Size()), epoch: h.LeaderEpoch,
	})
}

// pushInfo adds the index entry of a batch that passed checkNext.
func (x *index) pushInfo(b batchInfo) {
	if len(x.batches) == 0 {
		x.start = b.base
	}
	x.batches = append(x.batches, b)
	x.leo = b.last + 1
	x.size += int64(b.size)
	// Epochs never decrease (checkNext), so the cache is the list of points
	// where a new, non-negative epoch begins. -1 means "no epoch" in Kafka.
	if b.epoch >= 0 && (len(x.epochs) == 0 || b.epoch > x.epochs[len(x.epochs)-1].Epoch) {
		x.epochs = append(x.epochs, EpochStart{Epoch: b.epoch, StartOffset: b.base})
	}
}

// find returns the position of the first batch with an offset >= offset:
// the batch holding offset, or len(batches) at the LEO.
func (x *index) find(offset int64) int {
	return sort.Search(len(x.batches), func(i int) bool { return x.batches[i].last >= offset })
}

// truncate keeps the first n batches.
func (x *index) truncate(n int) {
	if n >= len(x.batches) {
		return
	}
	x.leo = x.batches[n].base
	for _, b := range x.batches[n:] {
		x.size -= int64(b.size)
	}
	x.batches = x.batches[:n]
	e := sort.Search(len(x.epochs), func(i int) bool { return x.epochs[i].StartOffset >= x.leo })
	x.epochs = x.epochs[:e]
}

// dropFront removes the first n batches; the start moves to the LEO when
// none is left.
func (x *index) dropFront(n int) {
	if n == 0 {
		return
	}
	if n >= len(x.batches) {
		x.reset(x.leo)
		return
	}
	for _, b := range x.batches[:n] {
		x.size -= int64(b.size)
	}
	x.batches = x.batches[n:]
	x.start = x.batches[0].base
	// The epoch in force at the new start now begins there (Kafka's
	// truncateFromStart); later entries are unchanged.
	e := sort.Search(len(x.epochs), func(i int) bool { return x.epochs[i].StartOffset > x.start })
	if e > 0 {
		x.epochs = x.epochs[e-1:]
		x.epochs[0].StartOffset = x.start
	}
}

// readRange returns the positions [i, j) of the batches Read returns.
func (x *index) readRange(offset int64, maxBytes int, maxOffset int64) (i, j int, err error) {
	if offset < x.start || offset > x.leo {
		return 0, 0, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, x.start, x.leo)
	}
	if offset == x.leo || offset >= maxOffset {
		return 0, 0, nil
	}
	i = x.find(offset)
	total := 0
	for j = i; j < len(x.batches) && x.batches[j].base < maxOffset; j++ {
		size := int(x.batches[j].size)
		if j > i && total+size > maxBytes {
			break
		}
		total += size
	}
	return i, j, nil
}

// retentionCut returns how many leading batches retention deletes. It takes
// whole units from the front (unitEnd(i) is the position just past the unit
// starting at i) while the oldest unit is expired by maxAge or the units
// after it still hold maxBytes (Kafka's rules), and only units that end at
// or below maxOffset (the high watermark: unreplicated data is never
// deleted). The last unit can only go by age, and then everything has expired.
func (x *index) retentionCut(now time.Time, maxBytes int64, maxAge time.Duration, maxOffset int64, unitEnd func(int) int) int {
	cutoff := now.UnixMilli() - maxAge.Milliseconds()
	remaining := x.size
	cut := 0
	for cut < len(x.batches) {
		end := unitEnd(cut)
		if x.batches[end-1].last >= maxOffset {
			break
		}
		var bytes int64
		maxTS := int64(math.MinInt64)
		for _, b := range x.batches[cut:end] {
			bytes += int64(b.size)
			maxTS = max(maxTS, b.maxTS)
		}
		expired := maxAge > 0 && maxTS < cutoff
		tooBig := maxBytes > 0 && remaining-bytes >= maxBytes
		if !expired && !tooBig {
			break
		}
		cut, remaining = end, remaining-bytes
	}
	return cut
}

// offsetForTimestamp finds the first record with timestamp >= ts; batch(i)
// returns the checked bytes of the batch at position i.
func (x *index) offsetForTimestamp(ts int64, batch func(int) ([]byte, error)) (int64, int64, bool, error) {
	for i := range x.batches {
		if x.batches[i].maxTS < ts {
			continue
		}
		var off, at int64
		found := false
		err := eachRecordTime(batch, i, func(o, t int64) bool {
			if t >= ts {
				off, at, found = o, t, true
			}
			return !found
		})
		if err != nil || found {
			return off, at, found, err
		}
		// The batch's max timestamp lied; try the next batch.
	}
	return 0, 0, false, nil
}

// eachRecordTime reads the batch at position i and calls visit with each
// record's offset and timestamp, in order, until visit returns false.
func eachRecordTime(batch func(int) ([]byte, error), i int, visit func(offset, ts int64) bool) error {
	b, err := batch(i)
	if err != nil {
		return err
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	it := record.Records(b)
	for {
		r, ok, err := it.Next()
		if err != nil {
			return fmt.Errorf("%w: batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
		}
		if !ok || !visit(h.BaseOffset+int64(r.OffsetDelta), h.BaseTimestamp+r.TimestampDelta) {
			return nil
		}
	}
}

// maxTimestamp finds the largest record timestamp among the records below
// offset below, and the first record that carries it; batch(i) returns the
// checked bytes of the batch at position i. The batches' max timestamps
// pick the batches to read: a batch that reaches past below, or whose header
// claims a larger timestamp than any of its records carries, is read for
// what its records say; one that claims less than its records carry is
// taken at its word (reading every record of the log is not an option).
func (x *index) maxTimestamp(below int64, batch func(int) ([]byte, error)) (offset, ts int64, ok bool, err error) {
	// best reads batch i for its largest timestamp below below, and the
	// first record carrying it.
	best := func(i int) (off, top int64, found bool, err error) {
		err = eachRecordTime(batch, i, func(o, t int64) bool {
			if o >= below {
				return false
			}
			if !found || t > top {
				off, top, found = o, t, true
			}
			return true
		})
		return off, top, found, err
	}
	// Usually the first batch with the largest claim bears it out.
	first := -1
	for i := range x.batches {
		if x.batches[i].base >= below {
			break
		}
		if first < 0 || x.batches[i].maxTS > x.batches[first].maxTS {
			first = i
		}
	}
	if first < 0 {
		return 0, 0, false, nil
	}
	if offset, ts, ok, err = best(first); err != nil || ok && ts == x.batches[first].maxTS {
		return offset, ts, ok, err
	}
	// It did not: try the others by claim, largest first and of equal
	// claims the earlier batch, until no claim can beat what was found.
	var order []int
	for i := range x.batches {
		if i != first && x.batches[i].base < below {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return x.batches[order[a]].maxTS > x.batches[order[b]].maxTS })
	for _, i := range order {
		if ok && (x.batches[i].maxTS < ts || x.batches[i].maxTS == ts && x.batches[i].base > offset) {
			break
		}
		o, t, found, err := best(i)
		if err != nil {
			return 0, 0, false, err
		}
		if found && (!ok || t > ts || t == ts && o < offset) {
			offset, ts, ok = o, t, true
		}
	}
	return offset, ts, ok, nil
}

// epochsCopy returns the epoch cache for callers to keep.
func (x *index) epochsCopy() []EpochStart {
	return append([]EpochStart(nil), x.epochs...)
}

// endOffsetForEpoch: the largest cached epoch <= epoch and the start of the
// next cached epoch, or the LEO for the latest one.
func (x *index) endOffsetForEpoch(epoch int32) (int32, int64, bool) {
	i := sort.Search(len(x.epochs), func(i int) bool { return x.epochs[i].Epoch > epoch }) - 1
	switch {
	case i < 0:
		return -1, -1, false
	case i == len(x.epochs)-1:
		return x.epochs[i].Epoch, x.leo, true
	default:
		return x.epochs[i].Epoch, x.epochs[i+1].StartOffset, true
	}
}
