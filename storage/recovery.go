package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/messages/record"
	"github.com/tidwall/wal"
)

// tidwall/wal v1.2.1 on disk: segment files named by the 20-digit WAL index
// of their first entry, each a run of uvarint(len(data)) + data entries.
// TruncateFront/TruncateBack write the surviving part of a segment as
// NAME.START / NAME.END (via NAME.START.TEMP / NAME.END.TEMP) and then delete
// and rename files; wal.Open finishes that work if it was interrupted.

// segmentName is wal's file name for the segment starting at WAL index i.
func segmentName(i uint64) string { return fmt.Sprintf("%020d", i) }

// listSegments returns the first WAL index of every segment file in dir, in
// order, applying wal's own naming rules.
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		if i, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && i > 0 {
			segs = append(segs, i)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// prepareDir gets dir ready for the scan: it lets wal finish an interrupted
// truncation and removes temporary files a crash left behind (wal's load
// ignores *.TEMP files and never removes them).
func prepareDir(dir string, opts *wal.Options) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	pending := false
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".TEMP") || strings.HasSuffix(name, ".tmp"):
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		case strings.HasSuffix(name, ".START") || strings.HasSuffix(name, ".END"):
			pending = true
		}
	}
	if !pending {
		return nil
	}
	// wal renames and deletes files before it reads the last segment, so even
	// when that read fails on a torn tail (ErrCorrupt) the cleanup is done.
	l, err := wal.Open(dir, opts)
	if err == nil {
		return l.Close()
	}
	if errors.Is(err, wal.ErrCorrupt) {
		return nil // the scan reports what is wrong
	}
	return err
}

// scanSegments reads the segments of w.dir into w.x, checking framing, CRC
// and offset/epoch continuity, except the leading segments that snap (nil:
// none) still describes, whose index entries it takes from snap. A bad
// entry in the last segment with no valid batch after it is a torn write:
// the file is cut there. Anything else wrong is reported as a
// *CorruptError. It returns the segment list, the size of the last segment
// file and how many segments it read.
func (w *WALLog) scanSegments(snap *indexSnapshot) (segs []uint64, tail int, scanned int, err error) {
	segs, err = listSegments(w.dir)
	if err != nil || len(segs) == 0 {
		w.first = 1
		return []uint64{1}, 0, 0, err // wal.Open creates segment 1
	}
	w.first = segs[0]
	next := segs[0] // WAL index expected next
	trusted := 0
	if snap != nil {
		trusted = snap.trusted(w.dir, segs)
		if batches, err := snap.batchesBefore(trusted); err != nil {
			trusted = 0
		} else if trusted > 0 {
			for _, bi := range batches {
				w.x.pushInfo(bi)
			}
			next = w.first + uint64(len(w.x.batches))
			tail = int(snap.sizes[trusted-1])
		}
	}
	for k := trusted; k < len(segs); k++ {
		seg := segs[k]
		path := filepath.Join(w.dir, segmentName(seg))
		if seg != next {
			return nil, 0, 0, &CorruptError{Segment: path, Pos: 0, Offset: w.x.leo,
				Err: fmt.Errorf("segment starts at WAL index %d, previous one ends before %d", seg, next)}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, 0, err
		}
		scanned++
		pos := 0
		for pos < len(data) {
			h, n, err := frameAt(data, pos)
			if err == nil {
				next, epoch := w.x.leo, w.x.lastEpoch()
				if len(w.x.batches) == 0 {
					next = h.BaseOffset // the first batch sets the start
				}
				if err := follows(h, next, epoch); err != nil {
					// Valid bytes in the wrong place: no torn write does that.
					return nil, 0, 0, &CorruptError{Segment: path, Pos: int64(pos), Offset: w.x.leo, Err: err}
				}
				w.x.push(h)
				pos += n
				continue
			}
			if k < len(segs)-1 || validFrameAfter(data, pos+1) {
				return nil, 0, 0, &CorruptError{Segment: path, Pos: int64(pos), Offset: w.x.leo, Err: err}
			}
			if err := cutTail(path, pos); err != nil {
				return nil, 0, 0, err
			}
			w.logger.Warn("storage: dropped torn tail of WAL segment",
				"segment", path, "pos", pos, "bytes", len(data)-pos, "offset", w.x.leo, "cause", err)
			data = data[:pos]
		}
		next = w.first + uint64(len(w.x.batches))
		tail = len(data)
	}
	return segs, tail, scanned, nil
}

// frameAt decodes the WAL entry at data[pos:] and checks it holds one whole,
// CRC-valid batch. n is the entry's size including the length prefix.
func frameAt(data []byte, pos int) (h record.Header, n int, err error) {
	size, m := binary.Uvarint(data[pos:])
	if m <= 0 {
		return h, 0, errors.New("bad entry length prefix")
	}
	if size > uint64(len(data)-pos-m) {
		return h, 0, fmt.Errorf("entry of %d bytes runs past the end of the file", size)
	}
	n = m + int(size)
	h, err = record.CheckCRC(data[pos+m : pos+n])
	return h, n, err
}

// validFrameAfter reports whether a WAL entry holding a valid batch starts
// anywhere at or after from. Cheap header checks come before the CRC.
func validFrameAfter(data []byte, from int) bool {
	for p := from; p < len(data); p++ {
		size, m := binary.Uvarint(data[p:])
		if m <= 0 || size < record.HeaderSize || size > uint64(len(data)-p-m) {
			continue
		}
		b := data[p+m : p+m+int(size)]
		if b[16] != record.Magic || uint64(binary.BigEndian.Uint32(b[8:12]))+12 != size {
			continue
		}
		if _, err := record.CheckCRC(b); err == nil {
			return true
		}
	}
	return false
}

// cutTail truncates a segment file to size bytes and fsyncs it.
func cutTail(path string, size int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
