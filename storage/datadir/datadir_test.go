package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenLocksAndRecordsIdentity(t *testing.T) {
	path := t.TempDir()
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta() != nil || d.HasData() {
		t.Fatalf("a new directory has meta %v, data %v", d.Meta(), d.HasData())
	}
	if _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open while the first holds it: %v, want ErrLocked", err)
	}
	if err := d.WriteMeta(Meta{ClusterID: "c1", BrokerID: 3}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "topics", "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	defer again.Close()
	if m := again.Meta(); m == nil || m.ClusterID != "c1" || m.BrokerID != 3 || m.DirectoryID != d.DirectoryID() || !again.HasData() {
		t.Fatalf("reopened: meta %v, data %v", m, again.HasData())
	}
}

func TestUnreadableMetaIsAnError(t *testing.T) {
	path := t.TempDir()
	if err := os.WriteFile(filepath.Join(path, MetaFile), []byte("cluster.id=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("a meta.properties without ids was accepted")
	}
}

func TestCheck(t *testing.T) {
	mine := &Meta{ClusterID: "c1", BrokerID: 1}
	cases := []struct {
		name    string
		meta    *Meta
		data    bool
		store   string
		create  bool
		wantErr error
	}{
		{"new directory, new store: a new cluster", nil, false, "", true, nil},
		{"new directory joins a cluster", nil, false, "c1", false, nil},
		{"existing data without meta adopts the store's id", nil, true, "c1", false, nil},
		{"existing data without meta, store without id", nil, true, "", false, ErrInconsistentCluster},
		{"same cluster", mine, true, "c1", false, nil},
		{"store lost its id", mine, true, "", false, ErrInconsistentCluster},
		{"store lost its id, no data yet", mine, false, "", false, ErrInconsistentCluster},
		{"another cluster", mine, true, "c2", false, ErrInconsistentCluster},
		{"another broker id", &Meta{ClusterID: "c1", BrokerID: 2}, true, "c1", false, ErrWrongBroker},
	}
	for _, c := range cases {
		create, err := Check(c.meta, c.data, 1, c.store)
		if create != c.create || !errors.Is(err, c.wantErr) || (err == nil) != (c.wantErr == nil) {
			t.Errorf("%s: create %v, err %v; want %v, %v", c.name, create, err, c.create, c.wantErr)
		}
	}
}

func TestProducerIDsEnd(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if end, err := d.ProducerIDsEnd(); end != 0 || err != nil {
		t.Fatalf("new directory: %d %v", end, err)
	}
	if err := d.RecordProducerIDsEnd(2001); err != nil {
		t.Fatal(err)
	}
	if end, err := d.ProducerIDsEnd(); end != 2001 || err != nil {
		t.Fatalf("after recording 2001: %d %v", end, err)
	}
	if err := os.WriteFile(filepath.Join(d.Path(), producerIDsFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ProducerIDsEnd(); err == nil {
		t.Fatal("a corrupt file read as a producer id")
	}
}
