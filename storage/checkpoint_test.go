package storage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hw")
	if v, ok, err := ReadCheckpoint(path); v != 0 || ok || err != nil {
		t.Fatalf("missing file: %d %v %v", v, ok, err)
	}
	for _, want := range []int64{0, 42, -1, 1<<63 - 1} {
		must(t, WriteCheckpoint(path, want))
		if v, ok, err := ReadCheckpoint(path); v != want || !ok || err != nil {
			t.Fatalf("read %d %v %v, want %d", v, ok, err, want)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	must(t, WriteCheckpoint(path, 123456))
	good, err := os.ReadFile(path)
	must(t, err)
	garbled := map[string][]byte{"empty": nil, "truncated": good[:len(good)-3], "no newline": good[:len(good)-1]}
	for i := range good { // every single-bit flip
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			garbled[string(b)] = b
		}
	}
	garbled["other value, old checksum"] = []byte("sluice-ckpt-1 123457" + string(good[len(good)-10:]))
	for name, b := range garbled {
		must(t, os.WriteFile(path, b, 0o640))
		if v, ok, err := ReadCheckpoint(path); err == nil || ok {
			t.Fatalf("%q: read %d %v %v", name, v, ok, err)
		} else {
			wantErr(t, err, ErrCorrupt)
		}
	}
}
