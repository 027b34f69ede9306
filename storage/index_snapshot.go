package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/sluicemq/sluice/storage/atomicfile"
)

// The index snapshot lets a log open without reading its segments. A log
// writes it when it closes its WAL (on Close, and when the pool closes an
// idle log), after wal's own fsync of the tail: it lists every segment
// with its size and every batch's index entry. On open, the leading
// segments whose name and size still match are taken from the snapshot;
// only the segments after them (written after the snapshot: a crash while
// the log was in use) are read and checked as before. Segments are only
// ever appended to or replaced under a new name (wal's truncations write a
// copy and rename it), except TruncateTo, which removes the snapshot first.
const indexSnapshotFile = "index.snapshot"

const snapshotMagic = "sluice-index-1\n"

// indexSnapshot is the decoded file.
type indexSnapshot struct {
	first   uint64
	segs    []uint64
	sizes   []int64
	start   int64 // log start offset when there are no batches
	batches []batchInfo
}

// encode appends the snapshot of w's current state to dst.
func (w *WALLog) encodeSnapshot() []byte {
	b := []byte(snapshotMagic)
	b = binary.AppendUvarint(b, w.first)
	b = binary.AppendVarint(b, w.x.start)
	b = binary.AppendUvarint(b, uint64(len(w.segs)))
	for k, seg := range w.segs {
		b = binary.AppendUvarint(b, seg)
		b = binary.AppendVarint(b, w.segmentBytes(k))
	}
	b = binary.AppendUvarint(b, uint64(len(w.x.batches)))
	for _, bi := range w.x.batches {
		b = binary.AppendVarint(b, bi.base)
		b = binary.AppendVarint(b, bi.last-bi.base)
		b = binary.AppendVarint(b, bi.maxTS)
		b = binary.AppendUvarint(b, uint64(bi.size))
		b = binary.AppendVarint(b, int64(bi.epoch))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// segmentBytes is the size of segment k's file as the index describes it.
func (w *WALLog) segmentBytes(k int) int64 {
	from := int(w.segs[k] - w.first)
	to := len(w.x.batches)
	if k+1 < len(w.segs) {
		to = int(w.segs[k+1] - w.first)
	}
	var n int64
	for _, bi := range w.x.batches[from:to] {
		n += int64(entrySize(int(bi.size)))
	}
	return n
}

// writeSnapshot replaces the snapshot file (temporary file and rename; no
// fsync: a snapshot lost in a crash only costs a scan on the next open).
func (w *WALLog) writeSnapshot() error {
	return atomicfile.Write(filepath.Join(w.dir, indexSnapshotFile), w.encodeSnapshot(), 0o640, false)
}

// removeSnapshot deletes the snapshot before a change it could not detect.
func (w *WALLog) removeSnapshot() error {
	err := os.Remove(filepath.Join(w.dir, indexSnapshotFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil {
		return w.syncDir()
	}
	return nil
}

// readIndexSnapshot returns the snapshot in dir, or nil when there is
// none or it does not decode (the log is then scanned).
func readIndexSnapshot(dir string) *indexSnapshot {
	data, err := os.ReadFile(filepath.Join(dir, indexSnapshotFile))
	if err != nil {
		return nil
	}
	s, err := decodeSnapshot(data)
	if err != nil {
		return nil
	}
	return s
}

var errBadSnapshot = errors.New("bad index snapshot")

func decodeSnapshot(data []byte) (*indexSnapshot, error) {
	if len(data) < len(snapshotMagic)+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errBadSnapshot
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return nil, errBadSnapshot
	}
	r := snapshotReader{b: body[len(snapshotMagic):]}
	s := &indexSnapshot{first: r.uvarint(), start: r.varint()}
	nsegs := r.uvarint()
	if nsegs == 0 || nsegs > uint64(len(r.b)) {
		return nil, errBadSnapshot
	}
	for range nsegs {
		s.segs = append(s.segs, r.uvarint())
		s.sizes = append(s.sizes, r.varint())
	}
	nb := r.uvarint()
	if nb > uint64(len(r.b)) {
		return nil, errBadSnapshot
	}
	s.batches = make([]batchInfo, 0, nb)
	for range nb {
		base := r.varint()
		s.batches = append(s.batches, batchInfo{base: base, last: base + r.varint(), maxTS: r.varint(),
			size: int32(r.uvarint()), epoch: int32(r.varint())})
	}
	if r.err != nil || len(r.b) != 0 || s.segs[0] != s.first {
		return nil, errBadSnapshot
	}
	return s, nil
}

type snapshotReader struct {
	b   []byte
	err error
}

func (r *snapshotReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errBadSnapshot, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *snapshotReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errBadSnapshot, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// trusted returns how many leading segments of segs (the files in dir)
// the snapshot describes as they are: same first WAL index, same size.
// Only the snapshot's last segment may have grown since; it and any later
// one are not trusted then.
func (s *indexSnapshot) trusted(dir string, segs []uint64) int {
	t := 0
	for t < len(segs) && t < len(s.segs) && segs[t] == s.segs[t] {
		st, err := os.Stat(filepath.Join(dir, segmentName(segs[t])))
		if err != nil || st.Size() != s.sizes[t] {
			break
		}
		t++
	}
	return t
}

// batchesBefore returns the snapshot's batches held by its first t segments.
func (s *indexSnapshot) batchesBefore(t int) ([]batchInfo, error) {
	if t >= len(s.segs) {
		return s.batches, nil
	}
	n := s.segs[t] - s.first
	if n > uint64(len(s.batches)) {
		return nil, fmt.Errorf("%w: segment %d starts past its batches", errBadSnapshot, s.segs[t])
	}
	return s.batches[:n], nil
}
