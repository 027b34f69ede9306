package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/messages/record"
)

// spec describes a test batch.
type spec struct {
	records int
	epoch   int32
	ts      int64 // timestamp of the first record; record i gets ts+i
	value   int   // value size of each record
}

// mkBatch builds a batch at base offset.
func mkBatch(base int64, s spec) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	val := bytes.Repeat([]byte{byte(base)}, s.value)
	for i := 0; i < s.records; i++ {
		b.Append(s.ts+int64(i), []byte(fmt.Sprint("k", base+int64(i))), val, nil)
	}
	out := slices.Clone(b.Finish())
	record.SetBaseOffset(out, base)
	record.SetLeaderEpoch(out, s.epoch)
	return out
}

// mkBatches builds consecutive batches starting at base.
func mkBatches(base int64, specs ...spec) [][]byte {
	var out [][]byte
	for _, s := range specs {
		out = append(out, mkBatch(base, s))
		base += int64(s.records)
	}
	return out
}

// recs returns specs of n-record batches with epoch 0 and value size 10.
func recs(ns ...int) []spec {
	var out []spec
	for _, n := range ns {
		out = append(out, spec{records: n, value: 10})
	}
	return out
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openWAL(t testing.TB, dir string, segBytes int) *WALLog {
	t.Helper()
	w, err := OpenWAL(dir, WALOptions{SegmentBytes: segBytes, NoSync: true}, quietLogger())
	if err != nil {
		t.Fatalf("OpenWAL: %v", err)
	}
	return w
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// readAll returns every batch of l.
func readAll(t testing.TB, l Log) [][]byte {
	t.Helper()
	out, err := l.Read(l.LogStartOffset(), 1<<40, l.LogEndOffset())
	if err != nil {
		t.Fatalf("read all: %v", err)
	}
	return out
}

// sameLog fails unless got holds exactly what want holds.
func sameLog(t testing.TB, got, want Log) {
	t.Helper()
	if g, w := got.LogStartOffset(), want.LogStartOffset(); g != w {
		t.Fatalf("start offset %d, want %d", g, w)
	}
	if g, w := got.LogEndOffset(), want.LogEndOffset(); g != w {
		t.Fatalf("LEO %d, want %d", g, w)
	}
	if g, w := got.Size(), want.Size(); g != w {
		t.Fatalf("size %d, want %d", g, w)
	}
	gb, wb := readAll(t, got), readAll(t, want)
	if len(gb) != len(wb) {
		t.Fatalf("%d batches, want %d", len(gb), len(wb))
	}
	for i := range gb {
		if !bytes.Equal(gb[i], wb[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if g, w := got.Epochs(), want.Epochs(); !slices.Equal(g, w) {
		t.Fatalf("epochs %v, want %v", g, w)
	}
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	must(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o640))
	}
	return dst
}

// segmentFiles returns the segment file paths of dir, oldest first.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	segs, err := listSegments(dir)
	must(t, err)
	var out []string
	for _, s := range segs {
		out = append(out, filepath.Join(dir, segmentName(s)))
	}
	return out
}
