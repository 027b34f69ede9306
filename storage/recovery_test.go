package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// buildLog writes a WAL log of small segments holding about 30 batches in
// several Appends and returns its directory and the model of what it holds.
// With lastAlone the last batch is the first entry of the last segment.
func buildLog(t *testing.T, lastAlone bool) (string, *MemLog) {
	t.Helper()
	dir := t.TempDir()
	w := openWAL(t, dir, 1024)
	m := NewMemLog()
	add := func(specs ...spec) {
		b := mkBatches(m.LogEndOffset(), specs...)
		must(t, w.Append(b...))
		must(t, m.Append(b...))
	}
	for i := 0; len(w.segs) < 4; i++ {
		add(spec{records: 1 + i%3, epoch: int32(i / 8), ts: int64(1000 + i), value: 40 + i%7},
			spec{records: 2, epoch: int32(i / 8), ts: int64(1000 + i), value: 30})
	}
	for (w.tail == 0) != lastAlone {
		add(spec{records: 1, epoch: 4, ts: 5000, value: 50})
	}
	add(spec{records: 3, epoch: 4, ts: 6000, value: 60}) // the last entry
	must(t, w.Close())
	return dir, m
}

// entryStarts returns the byte position of every entry in a segment file,
// and the file size last.
func entryStarts(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var pos []int
	for p := 0; p < len(data); {
		pos = append(pos, p)
		size, n := binary.Uvarint(data[p:])
		if n <= 0 {
			t.Fatalf("%s: bad entry at %d", path, p)
		}
		p += n + int(size)
	}
	return append(pos, len(data))
}

// reopenMatches opens dir, checks it holds what m holds, appends a batch,
// and checks that this survives a reopen too.
func reopenMatches(t *testing.T, dir string, m *MemLog) {
	t.Helper()
	w := openWAL(t, dir, 1024)
	sameLog(t, w, m)
	checkSegments(t, w)
	b := mkBatch(m.LogEndOffset(), spec{records: 2, epoch: 9, ts: 7000, value: 5})
	must(t, w.Append(b))
	must(t, w.Close())
	w = openWAL(t, dir, 1024)
	defer w.Close()
	m2 := NewMemLog()
	must(t, m2.Append(readAll(t, m)...))
	must(t, m2.Append(b))
	sameLog(t, w, m2)
}

// withoutLast returns a model holding all but the last batch of m.
func withoutLast(t *testing.T, m *MemLog) *MemLog {
	t.Helper()
	all := readAll(t, m)
	out := NewMemLog()
	must(t, out.Append(all[:len(all)-1]...))
	return out
}

func TestTornTail(t *testing.T) {
	for _, lastAlone := range []bool{false, true} {
		dir, m := buildLog(t, lastAlone)
		segs := segmentFiles(t, dir)
		last := segs[len(segs)-1]
		pos := entryStarts(t, last)
		from, to := pos[len(pos)-2], pos[len(pos)-1]
		if lastAlone != (from == 0) || len(segs) < 2 {
			t.Fatalf("setup: last entry at %d of %s, %d segments", from, last, len(segs))
		}
		prev := withoutLast(t, m)
		for cut := from; cut < to; cut++ {
			d := copyDir(t, dir)
			must(t, os.Truncate(filepath.Join(d, filepath.Base(last)), int64(cut)))
			reopenMatches(t, d, prev)
		}
		reopenMatches(t, copyDir(t, dir), m) // nothing cut
	}
}

func TestTornTailLogsWarning(t *testing.T) {
	dir, m := buildLog(t, false)
	segs := segmentFiles(t, dir)
	last := segs[len(segs)-1]
	pos := entryStarts(t, last)
	cut := pos[len(pos)-2] + 5
	must(t, os.Truncate(last, int64(cut)))
	var buf bytes.Buffer
	w, err := OpenWAL(dir, WALOptions{SegmentBytes: 1024, NoSync: true}, slog.New(slog.NewTextHandler(&buf, nil)))
	must(t, err)
	defer w.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "bytes=5 ") ||
		!strings.Contains(lines[0], "offset="+strconv.FormatInt(withoutLast(t, m).LogEndOffset(), 10)) {
		t.Fatalf("log output: %q", buf.String())
	}
}

func TestTrailingGarbage(t *testing.T) {
	dir, m := buildLog(t, false)
	segs := segmentFiles(t, dir)
	last := filepath.Base(segs[len(segs)-1])
	junk := map[string][]byte{
		"zeros":  make([]byte, 4096),
		"ones":   bytes.Repeat([]byte{0xff}, 100),
		"random": []byte("\x93\x01 this is not a batch at all, but it claims to be 147 bytes long..."),
		// A complete entry whose batch fails its CRC.
		"bad crc": func() []byte {
			b := mkBatch(m.LogEndOffset(), spec{records: 2, value: 20})
			b[len(b)-3] ^= 0x10
			return append(binary.AppendUvarint(nil, uint64(len(b))), b...)
		}(),
	}
	for name, j := range junk {
		t.Run(name, func(t *testing.T) {
			d := copyDir(t, dir)
			f, err := os.OpenFile(filepath.Join(d, last), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.Write(j)
			must(t, err)
			must(t, f.Close())
			reopenMatches(t, d, m)
		})
	}
}

// damage opens a copy of dir with fn applied to one segment file's bytes and
// returns OpenWAL's error, which must name that file.
func damage(t *testing.T, dir string, seg int, fn func(data []byte, entries []int) []byte) *CorruptError {
	t.Helper()
	d := copyDir(t, dir)
	path := segmentFiles(t, d)[seg]
	data, err := os.ReadFile(path)
	must(t, err)
	must(t, os.WriteFile(path, fn(data, entryStarts(t, path)), 0o640))
	// As after a crash: no index snapshot vouches for the segments.
	must(t, os.Remove(filepath.Join(d, indexSnapshotFile)))
	w, err := OpenWAL(d, WALOptions{SegmentBytes: 1024, NoSync: true}, quietLogger())
	if err == nil {
		w.Close()
		t.Fatal("OpenWAL succeeded on a damaged log")
	}
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Segment != path || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v does not report corruption in %s", err, path)
	}
	return ce
}

// batchAt returns where the batch of the entry at pos begins.
func batchAt(data []byte, pos int) int {
	_, n := binary.Uvarint(data[pos:])
	return pos + n
}

// flip flips one bit inside the CRC-covered part of the batch in entry e.
func flip(e int) func([]byte, []int) []byte {
	return func(data []byte, entries []int) []byte {
		data[batchAt(data, entries[e])+30] ^= 0x04
		return data
	}
}

func TestCorruptMidLog(t *testing.T) {
	dir, _ := buildLog(t, false)
	nsegs := len(segmentFiles(t, dir))
	if ce := damage(t, dir, 0, flip(0)); ce.Pos != 0 || ce.Offset != 0 {
		t.Fatalf("first entry: %+v", ce)
	}
	damage(t, dir, 1, flip(1))
	damage(t, dir, nsegs-1, flip(0)) // last segment, valid entries follow
	damage(t, dir, 0, func(data []byte, e []int) []byte {
		data[e[1]] ^= 0x01 // a length prefix
		return data
	})
	damage(t, dir, 1, func(data []byte, e []int) []byte { return data[:e[len(e)-1]-1] }) // torn, not last
	// Valid batches with offsets that do not continue the log: the base
	// offset is outside the CRC. Even as the very last entry that is no
	// torn write.
	shift := func(e int) func([]byte, []int) []byte {
		return func(data []byte, entries []int) []byte {
			if e < 0 {
				e = len(entries) - 2
			}
			p := batchAt(data, entries[e])
			binary.BigEndian.PutUint64(data[p:], binary.BigEndian.Uint64(data[p:])+1)
			return data
		}
	}
	damage(t, dir, 1, shift(0))
	damage(t, dir, nsegs-1, shift(-1))

	// An emptied or missing middle segment leaves a gap in WAL indexes and
	// offsets.
	for _, gap := range []func(string) error{
		func(path string) error { return os.Truncate(path, 0) },
		os.Remove,
	} {
		d := copyDir(t, dir)
		must(t, gap(segmentFiles(t, d)[1]))
		_, err := OpenWAL(d, WALOptions{SegmentBytes: 1024, NoSync: true}, quietLogger())
		wantErr(t, err, ErrCorrupt)
	}
}

// TestCorruptAfterOpen damages old segment files under an open log: reads
// must report corruption, never return the bytes or panic.
func TestCorruptAfterOpen(t *testing.T) {
	dir, m := buildLog(t, false)
	all := readAll(t, m)
	w := openWAL(t, dir, 1024)
	defer w.Close()
	segs := segmentFiles(t, dir)
	data, err := os.ReadFile(segs[0])
	must(t, err)
	data[batchAt(data, 0)+30] ^= 0x40
	must(t, os.WriteFile(segs[0], data, 0o640))
	_, err = w.Read(0, 1<<20, w.LogEndOffset())
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Segment != segs[0] || ce.Offset != 0 {
		t.Fatalf("read of a flipped batch: %v", err)
	}
	if _, _, _, err := w.OffsetForTimestamp(0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OffsetForTimestamp over a flipped batch: %v", err)
	}
	// Damaged framing in other old segments, loaded for the first time.
	// In segment 1 the first entry swallows the second, so wal sees one
	// entry fewer than there are batches (and used to panic reading it).
	e := entryStarts(t, segs[1])
	data, err = os.ReadFile(segs[1])
	must(t, err)
	b0 := batchAt(data, 0)
	merged := binary.AppendUvarint(nil, uint64(e[2]-b0))
	must(t, os.WriteFile(segs[1], append(merged, data[b0:]...), 0o640))
	for s := 2; s < len(segs)-1; s++ {
		e := entryStarts(t, segs[s])
		data, err := os.ReadFile(segs[s])
		must(t, err)
		data[e[0]] ^= byte(1 << (s % 8)) // first length prefix
		must(t, os.WriteFile(segs[s], data, 0o640))
	}
	readable := 0
	for off := int64(0); off < w.LogEndOffset(); off++ {
		got, err := w.Read(off, 1, w.LogEndOffset())
		if err != nil {
			wantErr(t, err, ErrCorrupt)
			continue
		}
		readable++
		i := m.x.find(off)
		if len(got) != 1 || !bytes.Equal(got[0], all[i]) {
			t.Fatalf("offset %d: read wrong bytes", off)
		}
	}
	if readable == 0 {
		t.Fatal("nothing readable: the last segment is untouched")
	}
}

func TestInterruptedTruncateFront(t *testing.T) {
	dir, m := buildLog(t, false)
	segs := segmentFiles(t, dir)
	// wal had written the START copy of segment 2 and removed nothing yet;
	// a crash also left a temporary file behind.
	data, err := os.ReadFile(segs[2])
	must(t, err)
	must(t, os.WriteFile(segs[2]+".START", data, 0o640))
	must(t, os.WriteFile(segs[3]+".END.TEMP", []byte("junk"), 0o640))
	w := openWAL(t, dir, 1024)
	defer w.Close()
	// The log now starts with segment 2's first batch.
	first, err := strconv.ParseUint(filepath.Base(segs[2]), 10, 64)
	must(t, err)
	must(t, m.DeleteBefore(m.x.batches[first-1].base))
	sameLog(t, w, m)
	if len(segmentFiles(t, dir)) != len(segs)-2 {
		t.Fatalf("segments %v", segmentFiles(t, dir))
	}
	if _, err := os.Stat(segs[3] + ".END.TEMP"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
	checkSegments(t, w)
}

func TestGarbledMeta(t *testing.T) {
	dir := t.TempDir()
	w := openWAL(t, dir, 1024)
	must(t, w.Append(mkBatch(0, spec{records: 3})))
	must(t, w.TruncateTo(0))
	must(t, w.Close())
	must(t, os.WriteFile(filepath.Join(dir, metaFile), []byte("sluice-ckpt-1 7 00000000\n"), 0o640))
	_, err := OpenWAL(dir, WALOptions{}, quietLogger())
	wantErr(t, err, ErrCorrupt)
}
