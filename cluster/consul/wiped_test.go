package consul

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicemq/sluice/cluster/consultest"
)

// A Consul agent wiped under a watcher and written to again until its
// metadata prefix is back at the very index the watcher waits on: Consul
// answers that index as if nothing had changed, yet the store is another.
// The watch must still hand out the new store (without this cluster's id),
// or the brokers would go on as if the store were theirs until its next
// change.
func TestWatchSeesAStoreWipedBackToItsIndex(t *testing.T) {
	t.Parallel()
	agent := consultest.Start(t)
	c, _ := openConsul(t, agent, clusterName(t), 0)
	kv := agent.Client().KV()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Raise the prefix's index well above where a fresh agent starts.
	for i := range 150 {
		if _, err := kv.Put(&api.KVPair{Key: c.key(fmt.Sprintf("filler/%d", i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	before, err := c.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.ClusterID == "" {
		t.Fatal("no cluster id before the wipe")
	}
	_, meta, err := kv.List(c.prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := meta.LastIndex

	// Wipe, then write outside the prefix up to the index before target
	// and one key inside it, at target. Another write of the agent's own
	// may take an index meanwhile; then start over.
	for attempt := 1; ; attempt++ {
		if err := agent.RestartEmpty(); err != nil {
			t.Fatal(err)
		}
		if refillTo(t, kv, c.key("back"), target) {
			break
		}
		if attempt == 3 {
			t.Fatalf("could not bring the wiped store's prefix to index %d in %d attempts", target, attempt)
		}
	}

	for {
		snap, err := c.Watch(ctx, before.Index)
		if ctx.Err() != nil {
			t.Fatal("the watch never handed out the wiped store")
		}
		if err != nil {
			continue // the agent's restart
		}
		if snap.Index <= before.Index {
			continue
		}
		if snap.ClusterID != "" || !snap.Regressed {
			t.Fatalf("after the wipe: cluster id %q, regressed %v; want none, regressed", snap.ClusterID, snap.Regressed)
		}
		return
	}
}

// refillTo writes keys outside the prefix of key until the agent's index
// is target-1, then key itself, and reports whether key landed at target.
func refillTo(t *testing.T, kv *api.KV, key string, target uint64) bool {
	t.Helper()
	for i := 0; ; i++ {
		// A new key each time: writing a key unchanged takes no index.
		other := fmt.Sprintf("elsewhere/%d", i)
		if _, err := kv.Put(&api.KVPair{Key: other}, nil); err != nil {
			t.Fatal(err)
		}
		got, _, err := kv.Get(other, nil)
		if err != nil || got == nil {
			t.Fatalf("reading back: %v %v", got, err)
		}
		switch {
		case got.ModifyIndex >= target:
			return false
		case got.ModifyIndex < target-1:
			continue
		}
		if _, err := kv.Put(&api.KVPair{Key: key}, nil); err != nil {
			t.Fatal(err)
		}
		back, _, err := kv.Get(key, nil)
		if err != nil || back == nil {
			t.Fatalf("reading back: %v %v", back, err)
		}
		return back.ModifyIndex == target
	}
}
