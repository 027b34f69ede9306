package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates and replaces a file with exactly its permissions, durable
// or not, and leaves no temporary file behind.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for i, c := range []struct {
		data    string
		perm    os.FileMode
		durable bool
	}{{"one", 0o600, true}, {"two", 0o644, false}, {"", 0o640, true}} {
		if err := Write(path, []byte(c.data), c.perm, c.durable); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != c.data {
			t.Fatalf("write %d: read %q, %v", i, got, err)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != c.perm {
			t.Errorf("write %d: mode %v, want %v", i, st.Mode().Perm(), c.perm)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
}

// A temporary file left by a crash is replaced, and a symbolic link at
// the temporary name is removed, not followed.
func TestWriteIgnoresLeftovers(t *testing.T) {
	dir := t.TempDir()
	path, target := filepath.Join(dir, "f"), filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o644, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "keep" {
		t.Errorf("the link's target was written: %q", got)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("path holds %q", got)
	}
}

// A write that cannot finish leaves the old content and no temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := Write(path, []byte("old"), 0o644, true); err != nil {
		t.Fatal(err)
	}
	// A directory at the path cannot be replaced by a file.
	sub := filepath.Join(dir, "d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(sub, []byte("new"), 0o644, true); err == nil {
		t.Fatal("replaced a directory")
	}
	if _, err := os.Stat(sub + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644, false); err == nil {
		t.Fatal("wrote into a missing directory")
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("old content: %q", got)
	}
}
