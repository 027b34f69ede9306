package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/cluster/storetest"
)

// TestEmbeddedStore runs the suite against the single-node store (no fence).
func TestEmbeddedStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		e, err := cluster.OpenEmbedded(t.TempDir(), cluster.Broker{ID: 0, Addr: "127.0.0.1:9470"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return storetest.Store{Store: e}
	})
}

// TestEmbeddedSecurityPersists: the record and its version survive a
// restart; a store without the security file (an older one) has none.
func TestEmbeddedSecurityPersists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	self := cluster.Broker{ID: 0, Addr: "127.0.0.1:9470"}
	reopen := func(e *cluster.Embedded) (*cluster.Embedded, *cluster.Snapshot) {
		t.Helper()
		if e != nil {
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		}
		e, err := cluster.OpenEmbedded(dir, self)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		snap, err := e.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return e, snap
	}
	e, _ := reopen(nil)
	if err := createTopic(ctx, e, "t"); err != nil {
		t.Fatal(err)
	}
	e, snap := reopen(e)
	if snap.Security != nil || snap.SecurityVersion != 0 || len(snap.Topics) != 1 {
		t.Fatalf("reopened store without a security file: record %v at version %d, topics %v", snap.Security, snap.SecurityVersion, snap.Topics)
	}
	rec := storetest.Security("alice")
	if err := e.UpdateSecurity(ctx, cluster.Fence{}, rec, 0); err != nil {
		t.Fatal(err)
	}
	before, err := e.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, snap = reopen(e)
	if !proto.Equal(snap.Security, rec) || snap.SecurityVersion != before.SecurityVersion || snap.SecurityVersion == 0 {
		t.Fatalf("reopened: security record %v at version %d, want %v at %d", snap.Security, snap.SecurityVersion, rec, before.SecurityVersion)
	}
	if snap.Index < before.Index {
		t.Fatalf("index %d after reopening, was %d", snap.Index, before.Index)
	}
	// The version still guards writes after the restart.
	if err := e.UpdateSecurity(ctx, cluster.Fence{}, storetest.Security("bob"), 0); !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("write with version 0 after reopening: %v, want cluster.ErrConflict", err)
	}
	if err := e.UpdateSecurity(ctx, cluster.Fence{}, storetest.Security("bob"), snap.SecurityVersion); err != nil {
		t.Fatal(err)
	}
	e, snap = reopen(e)
	if !proto.Equal(snap.Security, storetest.Security("bob")) || snap.SecurityVersion <= before.SecurityVersion {
		t.Fatalf("reopened after a second write: %v at version %d", snap.Security, snap.SecurityVersion)
	}

	// A damaged security file is an error, not an empty record.
	e.Close()
	if err := os.WriteFile(filepath.Join(dir, "security.pb") /* the embedded store's security file */, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := cluster.OpenEmbedded(dir, self); err == nil {
		e.Close()
		t.Fatal("opened a store with a truncated security file")
	}
}

// createTopic creates a two-partition topic on s, which ignores fences.
func createTopic(ctx context.Context, s cluster.MetadataStore, name string) error {
	topic, parts := storetest.Topic(name, 2)
	return s.CreateTopic(ctx, cluster.Fence{}, topic, parts)
}
