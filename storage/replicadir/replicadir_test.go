package replicadir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestClaim(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "orders-0"))
	if removed, err := d.Claim("id-1"); err != nil || removed {
		t.Fatalf("a fresh directory: removed %v, %v", removed, err)
	}
	if err := os.WriteFile(filepath.Join(string(d), "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if removed, err := d.Claim("id-1"); err != nil || removed {
		t.Fatalf("claimed again by its topic: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(string(d), "data")); err != nil {
		t.Fatalf("its own data went: %v", err)
	}
	// A topic of the same name created again: the old data goes.
	if removed, err := d.Claim("id-2"); err != nil || !removed {
		t.Fatalf("claimed by a new topic: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(string(d), "data")); !os.IsNotExist(err) {
		t.Fatalf("the deleted topic's data is still there: %v", err)
	}
	if id, err := d.TopicID(); err != nil || id != "id-2" {
		t.Fatalf("topic id %q, %v", id, err)
	}
}

func TestProducerSnapshot(t *testing.T) {
	d := Dir(t.TempDir())
	if _, ok, err := d.ReadProducerSnapshot(); ok || err != nil {
		t.Fatalf("no snapshot yet: ok %v, %v", ok, err)
	}
	if err := d.WriteProducerSnapshot([]byte("state")); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := d.ReadProducerSnapshot(); !ok || err != nil || string(data) != "state" {
		t.Fatalf("read back %q, %v, %v", data, ok, err)
	}
	for range 2 { // removing what is not there is no error
		if err := d.RemoveProducerSnapshot(); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := d.ReadProducerSnapshot(); ok {
		t.Fatal("the snapshot is still there")
	}
}

func TestMoveLogAside(t *testing.T) {
	d := Dir(t.TempDir())
	if err := os.MkdirAll(d.Log(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(d.Log(), "00000001"), d.Checkpoint()} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.WriteProducerSnapshot([]byte("s")); err != nil {
		t.Fatal(err)
	}
	aside, leftovers, err := d.MoveLogAside(time.Unix(0, 42))
	if err != nil || len(leftovers) > 0 || filepath.Base(aside) != "log.corrupt-42" {
		t.Fatalf("aside %q, leftovers %v, %v", aside, leftovers, err)
	}
	if _, err := os.Stat(filepath.Join(aside, "00000001")); err != nil {
		t.Fatalf("the corrupt log was not kept: %v", err)
	}
	for _, f := range []string{d.Log(), d.Checkpoint(), filepath.Join(string(d), producerSnapshotFile)} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", f, err)
		}
	}
	if _, _, err := d.MoveLogAside(time.Unix(0, 43)); err == nil {
		t.Fatal("moved a log that is not there")
	}
}
