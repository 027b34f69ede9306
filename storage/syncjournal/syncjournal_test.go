package syncjournal

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPowerLossKeepsOnlyWhatWasSynced(t *testing.T) {
	root := t.TempDir()
	journal := filepath.Join(t.TempDir(), "journal")
	if err := Enable(journal); err != nil {
		t.Fatal(err)
	}
	defer active.Store(nil)
	synced := filepath.Join(root, "a")
	never := filepath.Join(root, "sub", "b")
	os.MkdirAll(filepath.Dir(never), 0o755)
	os.WriteFile(synced, []byte("durable"), 0o644)
	SyncedFile(synced)
	f, _ := os.OpenFile(synced, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(" and not")
	f.Close()
	os.WriteFile(never, []byte("gone"), 0o644)
	loss, err := PowerLoss(root, journal)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(synced); string(got) != "durable" {
		t.Fatalf("synced file holds %q after the power loss", got)
	}
	if got, _ := os.ReadFile(never); len(got) != 0 {
		t.Fatalf("never-synced file holds %q", got)
	}
	if loss.Files != 2 || loss.Bytes != int64(len(" and not")+len("gone")) {
		t.Fatalf("loss %+v", loss)
	}
}

// A record made before the fact counts only once its next file exists.
func TestSyncedBeforeCreateNeedsTheNextFile(t *testing.T) {
	root := t.TempDir()
	journal := filepath.Join(t.TempDir(), "journal")
	if err := Enable(journal); err != nil {
		t.Fatal(err)
	}
	defer active.Store(nil)
	done, pending := filepath.Join(root, "1"), filepath.Join(root, "2")
	SyncedBeforeCreate(done, 4, filepath.Join(root, "1.next"))
	SyncedBeforeCreate(pending, 4, filepath.Join(root, "2.next"))
	for _, p := range []string{done, pending} {
		os.WriteFile(p, []byte("full and more"), 0o644)
	}
	os.WriteFile(filepath.Join(root, "1.next"), nil, 0o644)
	if _, err := PowerLoss(root, journal); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(done); string(got) != "full" {
		t.Fatalf("file whose next exists holds %q", got)
	}
	if got, _ := os.ReadFile(pending); len(got) != 0 {
		t.Fatalf("file whose next does not exist holds %q", got)
	}
}

// A record made before a rewrite counts for the rewritten file once it is
// in place, and neither for the file it replaces nor for the one at tmp.
func TestSyncedBeforeRenameCountsOnlyForTheRenamedFile(t *testing.T) {
	root := t.TempDir()
	journal := filepath.Join(t.TempDir(), "journal")
	if err := Enable(journal); err != nil {
		t.Fatal(err)
	}
	defer active.Store(nil)
	path, tmp := filepath.Join(root, "seg"), filepath.Join(root, "seg.END.TEMP")
	os.WriteFile(path, []byte("old, never synced"), 0o644)
	if err := SyncedBeforeRename(tmp, path, 3, 0o640); err != nil {
		t.Fatal(err)
	}
	// Before the rename: the old file and the one being written.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	f.Close()
	before := t.TempDir()
	for _, p := range []string{path, tmp} {
		data, _ := os.ReadFile(p)
		os.WriteFile(filepath.Join(before, filepath.Base(p)), data, 0o644)
	}
	if _, err := PowerLoss(root, journal); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, tmp} {
		if got, _ := os.ReadFile(p); len(got) != 0 {
			t.Fatalf("%s holds %q before the rename", filepath.Base(p), got)
		}
	}
	// After it, with bytes appended and never synced.
	for _, p := range []string{path, tmp} {
		data, _ := os.ReadFile(filepath.Join(before, filepath.Base(p)))
		os.WriteFile(p, data, 0o644)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(" and more")
	f.Close()
	if _, err := PowerLoss(root, journal); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Fatalf("renamed file holds %q", got)
	}
}
