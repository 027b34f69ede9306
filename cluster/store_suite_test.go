package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// storeUnderTest is one MetadataStore for the conformance suite.
type storeUnderTest struct {
	store MetadataStore
	fence Fence
	// other is a second handle on the same metadata (a second backend), for
	// concurrent allocators; nil: use store twice.
	other MetadataStore
	// lose makes fence stale (the controller loses its leadership); nil:
	// the store ignores fences.
	lose func(t *testing.T)
}

// TestEmbeddedStore runs the suite against the single-node store (no fence).
func TestEmbeddedStore(t *testing.T) {
	runStoreSuite(t, func(t *testing.T) storeUnderTest {
		e, err := OpenEmbedded(t.TempDir(), Broker{ID: 0, Addr: "127.0.0.1:9470"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return storeUnderTest{store: e}
	})
}

// TestConsulStore runs the suite against Consul, writing with the fence of
// a won campaign.
func TestConsulStore(t *testing.T) {
	agent := sharedAgent(t)
	runStoreSuite(t, func(t *testing.T) storeUnderTest {
		name := clusterName(t)
		open := openConsul
		if strings.HasSuffix(t.Name(), "/ClusterID") {
			open = openConsulWithoutID // the subtest creates it
		}
		c, _ := open(t, agent, name, 0)
		register(t, c, 1)
		lead := campaign(t, c, 1)
		other, _ := open(t, agent, name, 0)
		lose := func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, lead.Lost, 5*time.Second, "Lost after Resign")
		}
		return storeUnderTest{store: c, fence: lead.Fence, other: other, lose: lose}
	})
}

func testTopic(name string, partitions int32) (*messages.TopicRecord, []*messages.PartitionState) {
	t := &messages.TopicRecord{Name: name, TopicId: NewTopicID(), Partitions: partitions, ReplicationFactor: 1,
		Configs: map[string]string{"retention.ms": "1000"}}
	var parts []*messages.PartitionState
	for p := int32(0); p < partitions; p++ {
		t.Assignment = append(t.Assignment, &messages.ReplicaAssignment{Replicas: []int32{p % 3}})
		parts = append(parts, &messages.PartitionState{Topic: name, Partition: p, TopicId: t.TopicId,
			Leader: p % 3, Isr: []int32{p % 3}, Replicas: []int32{p % 3}})
	}
	return t, parts
}

// testSecurity returns a security record with one ACL and one user.
func testSecurity(user string) *messages.SecurityRecord {
	return &messages.SecurityRecord{
		Acls: []*messages.AclBinding{{ResourceType: messages.AclResourceType_ACL_RESOURCE_TOPIC, ResourceName: "orders",
			PatternType: messages.AclPatternType_ACL_PATTERN_LITERAL, Principal: "User:" + user, Host: "*",
			Operation: messages.AclOperation_ACL_OPERATION_READ, Permission: messages.AclPermission_ACL_PERMISSION_ALLOW}},
		Users: []*messages.UserRecord{{Name: user, TokenSha256: "00ff", CreatedUnixMs: 1700000000000}},
	}
}

func runStoreSuite(t *testing.T, open func(t *testing.T) storeUnderTest) {
	ctx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	load := func(t *testing.T, s MetadataStore) *Snapshot {
		t.Helper()
		snap, err := s.Load(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	create := func(t *testing.T, u storeUnderTest, name string, partitions int32) (*messages.TopicRecord, []*messages.PartitionState) {
		t.Helper()
		topic, parts := testTopic(name, partitions)
		if err := u.store.CreateTopic(ctx(t), u.fence, topic, parts); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return topic, parts
	}

	t.Run("ClusterID", func(t *testing.T) {
		u := open(t)
		if id := load(t, u.store).ClusterID; id != "" {
			t.Fatalf("a new store has cluster id %q before CreateClusterID", id)
		}
		id, err := u.store.CreateClusterID(ctx(t))
		if err != nil || id == "" {
			t.Fatalf("CreateClusterID: %q, %v", id, err)
		}
		second := u.store
		if u.other != nil {
			second = u.other
		}
		if again, err := second.CreateClusterID(ctx(t)); err != nil || again != id {
			t.Fatalf("second CreateClusterID: %q, %v; want the first one's %q", again, err, id)
		}
		if got := load(t, u.store).ClusterID; got != id {
			t.Fatalf("loaded cluster id %q, want %q", got, id)
		}
	})

	t.Run("CreateAndLoad", func(t *testing.T) {
		u := open(t)
		if _, err := u.store.CreateClusterID(ctx(t)); err != nil {
			t.Fatal(err)
		}
		topic, parts := create(t, u, "orders", 3)
		if err := u.store.CreateTopic(ctx(t), u.fence, topic, parts); !errors.Is(err, ErrTopicExists) {
			t.Fatalf("duplicate create: %v, want ErrTopicExists", err)
		}
		snap := load(t, u.store)
		if snap.ClusterID == "" || snap.Index == 0 {
			t.Fatalf("cluster id %q, index %d", snap.ClusterID, snap.Index)
		}
		if got := snap.Topics["orders"]; !proto.Equal(got, topic) || len(snap.Topics) != 1 {
			t.Fatalf("topics %v, want only %v", snap.Topics, topic)
		}
		got := snap.PartitionsOf("orders")
		if len(got) != 3 || len(snap.Partitions) != 3 {
			t.Fatalf("%d partitions of orders, %d in all, want 3", len(got), len(snap.Partitions))
		}
		for i, p := range got {
			if !proto.Equal(p.State, parts[i]) || p.Version == 0 {
				t.Fatalf("partition %d: %v at version %d, want %v", i, p.State, p.Version, parts[i])
			}
		}
		if again := load(t, u.store); again.ClusterID != snap.ClusterID {
			t.Fatalf("cluster id changed from %s to %s", snap.ClusterID, again.ClusterID)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		u := open(t)
		deleted, _ := create(t, u, "a", 2)
		create(t, u, "ab", 2) // shares a prefix with "a"
		if err := u.store.DeleteTopic(ctx(t), u.fence, "a"); err != nil {
			t.Fatal(err)
		}
		if err := u.store.DeleteTopic(ctx(t), u.fence, "a"); !errors.Is(err, ErrTopicNotFound) {
			t.Fatalf("second delete: %v, want ErrTopicNotFound", err)
		}
		if err := u.store.DeleteTopic(ctx(t), u.fence, "never"); !errors.Is(err, ErrTopicNotFound) {
			t.Fatalf("delete of a missing topic: %v, want ErrTopicNotFound", err)
		}
		snap := load(t, u.store)
		if _, ok := snap.Topics["a"]; ok || len(snap.PartitionsOf("ab")) != 2 || len(snap.Partitions) != 2 {
			t.Fatalf("after delete: topics %v, %d partitions", snap.Topics, len(snap.Partitions))
		}
		// The deletion is recorded, by topic id, for brokers that were down.
		if d := snap.Deleted[deleted.TopicId]; d == nil || d.Name != "a" || len(snap.Deleted) != 1 {
			t.Fatalf("deletion records %v, want one for a (%s)", snap.Deleted, deleted.TopicId)
		}
		// The name is free again.
		create(t, u, "a", 1)
		if n := len(load(t, u.store).PartitionsOf("a")); n != 1 {
			t.Fatalf("re-created a has %d partitions", n)
		}
	})

	t.Run("ManyPartitions", func(t *testing.T) {
		// More than one Consul transaction holds.
		u := open(t)
		create(t, u, "wide", 300)
		if n := len(load(t, u.store).PartitionsOf("wide")); n != 300 {
			t.Fatalf("%d partitions, want 300", n)
		}
		topic, parts := testTopic("wide", 300)
		if err := u.store.CreateTopic(ctx(t), u.fence, topic, parts); !errors.Is(err, ErrTopicExists) {
			t.Fatalf("duplicate create: %v", err)
		}
		if err := u.store.DeleteTopic(ctx(t), u.fence, "wide"); err != nil {
			t.Fatal(err)
		}
		if snap := load(t, u.store); len(snap.Partitions) != 0 {
			t.Fatalf("%d partitions left", len(snap.Partitions))
		}
	})

	t.Run("UpdateTopic", func(t *testing.T) {
		u := open(t)
		prev, _ := create(t, u, "grow", 2)
		// Grow from 2 to 100 partitions (more than one Consul transaction)
		// and change a config, in one update.
		next, all := testTopic("grow", 100)
		next.TopicId = prev.TopicId
		next.Configs = map[string]string{"retention.ms": "5000", "cleanup.policy": "delete"}
		for _, p := range all {
			p.TopicId = prev.TopicId
		}
		if err := u.store.UpdateTopic(ctx(t), u.fence, prev, next, all[2:]); err != nil {
			t.Fatal(err)
		}
		snap := load(t, u.store)
		if got := snap.Topics["grow"]; !proto.Equal(got, next) || len(snap.PartitionsOf("grow")) != 100 {
			t.Fatalf("after the update: %v with %d partitions", got, len(snap.PartitionsOf("grow")))
		}
		// An update from a stale record is refused, and changes nothing.
		stale := proto.Clone(next).(*messages.TopicRecord)
		stale.Configs = map[string]string{"retention.ms": "1"}
		if err := u.store.UpdateTopic(ctx(t), u.fence, prev, stale, nil); !errors.Is(err, ErrConflict) {
			t.Fatalf("update from a stale record: %v, want ErrConflict", err)
		}
		if err := u.store.UpdateTopic(ctx(t), u.fence, &messages.TopicRecord{Name: "never"}, &messages.TopicRecord{Name: "never"}, nil); !errors.Is(err, ErrTopicNotFound) {
			t.Fatalf("update of a missing topic: %v, want ErrTopicNotFound", err)
		}
		if got := load(t, u.store).Topics["grow"]; !proto.Equal(got, next) {
			t.Fatalf("a refused update changed the record to %v", got)
		}
		if u.lose != nil {
			u.lose(t)
			if err := u.store.UpdateTopic(ctx(t), u.fence, next, stale, nil); !errors.Is(err, ErrFenced) {
				t.Fatalf("update by a deposed controller: %v, want ErrFenced", err)
			}
		}
	})

	t.Run("Watch", func(t *testing.T) {
		u := open(t)
		create(t, u, "before", 1)
		start := load(t, u.store)
		// Nothing changes: Watch waits until its context ends (or returns
		// early with the same index).
		short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		snap, err := u.store.Watch(short, start.Index)
		cancel()
		if err == nil && snap.Index != start.Index {
			t.Fatalf("watch without a change returned index %d, started at %d", snap.Index, start.Index)
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		got := make(chan *Snapshot, 1)
		errc := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			for {
				snap, err := u.store.Watch(wctx, start.Index)
				if err != nil {
					errc <- err
					return
				}
				if snap.Index > start.Index {
					got <- snap
					return
				}
			}
		}()
		create(t, u, "after", 1)
		select {
		case snap := <-got:
			if _, ok := snap.Topics["after"]; !ok {
				t.Fatalf("woken snapshot at %d lacks the new topic", snap.Index)
			}
		case err := <-errc:
			t.Fatalf("watch: %v", err)
		}
		if _, err := u.store.Watch(ctx(t), 0); err != nil {
			t.Fatalf("watch from 0: %v", err)
		}
	})

	t.Run("UpdatePartitions", func(t *testing.T) {
		u := open(t)
		create(t, u, "t", 2)
		before := load(t, u.store).PartitionsOf("t")
		moved := func(p Partition, leader int32) *messages.PartitionState {
			st := proto.Clone(p.State).(*messages.PartitionState)
			st.Leader, st.LeaderEpoch, st.PartitionEpoch = leader, st.LeaderEpoch+1, st.PartitionEpoch+1
			return st
		}
		ok := []PartitionUpdate{{moved(before[0], 7), before[0].Version}, {moved(before[1], 8), before[1].Version}}
		if err := u.store.UpdatePartitions(ctx(t), u.fence, ok); err != nil {
			t.Fatal(err)
		}
		mid := load(t, u.store).PartitionsOf("t")
		for i, p := range mid {
			if !proto.Equal(p.State, ok[i].State) || p.Version == before[i].Version {
				t.Fatalf("partition %d after update: %v at version %d (was %d)", i, p.State, p.Version, before[i].Version)
			}
		}
		// One stale version: nothing is applied.
		stale := []PartitionUpdate{{moved(mid[0], 9), mid[0].Version}, {moved(mid[1], 9), before[1].Version}}
		err := u.store.UpdatePartitions(ctx(t), u.fence, stale)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("stale update: %v, want ErrConflict", err)
		}
		t.Logf("conflict: %v", err)
		after := load(t, u.store).PartitionsOf("t")
		for i := range after {
			if !proto.Equal(after[i].State, mid[i].State) || after[i].Version != mid[i].Version {
				t.Fatalf("partition %d changed by a failed update: %v", i, after[i].State)
			}
		}
		missing := &messages.PartitionState{Topic: "t", Partition: 5}
		if err := u.store.UpdatePartitions(ctx(t), u.fence, []PartitionUpdate{{missing, mid[0].Version}}); !errors.Is(err, ErrConflict) {
			t.Fatalf("update of a missing partition: %v, want ErrConflict", err)
		}
	})

	t.Run("AllocateProducerIDs", func(t *testing.T) {
		u := open(t)
		a, err := u.store.AllocateProducerIDs(ctx(t), u.fence, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := u.store.AllocateProducerIDs(ctx(t), u.fence, 5, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a < 1 || b < a+10 {
			t.Fatalf("allocations at %d (10) and %d (5)", a, b)
		}
		// A broker that had ids up to 5000 gets a block from there on,
		// and the counter follows.
		c, err := u.store.AllocateProducerIDs(ctx(t), u.fence, 5, 5000)
		if err != nil || c < 5000 {
			t.Fatalf("allocation at least 5000: %d %v", c, err)
		}
		if d, err := u.store.AllocateProducerIDs(ctx(t), u.fence, 5, 0); err != nil || d < c+5 {
			t.Fatalf("allocation after one at %d: %d %v", c, d, err)
		}
		// Two allocators at once never hand out the same id.
		other := u.other
		if other == nil {
			other = u.store
		}
		var mu sync.Mutex
		var firsts []int64
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, s := range []MetadataStore{u.store, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					first, err := s.AllocateProducerIDs(ctx(t), u.fence, 3, 0)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					firsts = append(firsts, first)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		slices.Sort(firsts)
		for i, f := range firsts {
			if f < b+5 || (i > 0 && f < firsts[i-1]+3) {
				t.Fatalf("overlapping allocations: %v", fmt.Sprint(firsts))
			}
		}
	})

	t.Run("Security", func(t *testing.T) {
		u := open(t)
		if snap := load(t, u.store); snap.Security != nil || snap.SecurityVersion != 0 {
			t.Fatalf("a new store has security record %v at version %d", snap.Security, snap.SecurityVersion)
		}
		// wantSecurity checks what every handle on the store loads.
		wantSecurity := func(t *testing.T, rec *messages.SecurityRecord, version uint64) {
			t.Helper()
			for _, s := range []MetadataStore{u.store, u.other} {
				if s == nil {
					continue
				}
				if snap := load(t, s); !proto.Equal(snap.Security, rec) || snap.SecurityVersion != version {
					t.Fatalf("security record %v at version %d, want %v at %d", snap.Security, snap.SecurityVersion, rec, version)
				}
			}
		}
		first := testSecurity("alice")
		if err := u.store.UpdateSecurity(ctx(t), u.fence, first, 0); err != nil {
			t.Fatalf("first write: %v", err)
		}
		v1 := load(t, u.store).SecurityVersion
		if v1 == 0 {
			t.Fatal("a stored security record has version 0")
		}
		wantSecurity(t, first, v1)

		// Version 0 means "none stored yet": one is.
		if err := u.store.UpdateSecurity(ctx(t), u.fence, testSecurity("bob"), 0); !errors.Is(err, ErrConflict) {
			t.Fatalf("second write with version 0: %v, want ErrConflict", err)
		}
		wantSecurity(t, first, v1)

		second := testSecurity("bob")
		if err := u.store.UpdateSecurity(ctx(t), u.fence, second, v1); err != nil {
			t.Fatalf("write at the current version: %v", err)
		}
		v2 := load(t, u.store).SecurityVersion
		if v2 <= v1 {
			t.Fatalf("version %d after a write at %d", v2, v1)
		}
		wantSecurity(t, second, v2)

		err := u.store.UpdateSecurity(ctx(t), u.fence, testSecurity("carol"), v1)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("write at a stale version: %v, want ErrConflict", err)
		}
		t.Logf("conflict: %v", err)
		wantSecurity(t, second, v2)
	})

	t.Run("SecurityWatch", func(t *testing.T) {
		u := open(t)
		start := load(t, u.store)
		got := make(chan *Snapshot, 1)
		errc := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			for {
				snap, err := u.store.Watch(wctx, start.Index)
				if err != nil {
					errc <- err
					return
				}
				if snap.Index > start.Index {
					got <- snap
					return
				}
			}
		}()
		rec := testSecurity("alice")
		if err := u.store.UpdateSecurity(ctx(t), u.fence, rec, 0); err != nil {
			t.Fatal(err)
		}
		select {
		case snap := <-got:
			if !proto.Equal(snap.Security, rec) || snap.SecurityVersion == 0 {
				t.Fatalf("woken snapshot at %d has security record %v at version %d, want %v", snap.Index, snap.Security, snap.SecurityVersion, rec)
			}
		case err := <-errc:
			t.Fatalf("watch: %v", err)
		}
	})

	t.Run("SecurityFenced", func(t *testing.T) {
		u := open(t)
		if u.lose == nil {
			t.Skip("the store ignores fences")
		}
		if err := u.store.UpdateSecurity(ctx(t), u.fence, testSecurity("alice"), 0); err != nil {
			t.Fatal(err)
		}
		v := load(t, u.store).SecurityVersion
		u.lose(t)
		// Fenced even where the write would also fail for its own reason.
		stale := map[string]error{
			"current version": u.store.UpdateSecurity(ctx(t), u.fence, testSecurity("bob"), v),
			"stale version":   u.store.UpdateSecurity(ctx(t), u.fence, testSecurity("bob"), v+1000),
			"zero fence":      u.store.UpdateSecurity(ctx(t), Fence{}, testSecurity("bob"), v),
		}
		for what, err := range stale {
			if !errors.Is(err, ErrFenced) || errors.Is(err, ErrConflict) {
				t.Errorf("write at the %s after losing leadership: %v, want ErrFenced only", what, err)
			}
		}
		if snap := load(t, u.store); !proto.Equal(snap.Security, testSecurity("alice")) || snap.SecurityVersion != v {
			t.Fatalf("a fenced write changed the security record to %v at version %d", snap.Security, snap.SecurityVersion)
		}
	})
}

// TestEmbeddedSecurityPersists: the record and its version survive a
// restart; a store without the security file (an older one) has none.
func TestEmbeddedSecurityPersists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	self := Broker{ID: 0, Addr: "127.0.0.1:9470"}
	reopen := func(e *Embedded) (*Embedded, *Snapshot) {
		t.Helper()
		if e != nil {
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		}
		e, err := OpenEmbedded(dir, self)
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
	if err := createTopic(ctx, e, Fence{}, "t"); err != nil {
		t.Fatal(err)
	}
	e, snap := reopen(e)
	if snap.Security != nil || snap.SecurityVersion != 0 || len(snap.Topics) != 1 {
		t.Fatalf("reopened store without a security file: record %v at version %d, topics %v", snap.Security, snap.SecurityVersion, snap.Topics)
	}
	rec := testSecurity("alice")
	if err := e.UpdateSecurity(ctx, Fence{}, rec, 0); err != nil {
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
	if err := e.UpdateSecurity(ctx, Fence{}, testSecurity("bob"), 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("write with version 0 after reopening: %v, want ErrConflict", err)
	}
	if err := e.UpdateSecurity(ctx, Fence{}, testSecurity("bob"), snap.SecurityVersion); err != nil {
		t.Fatal(err)
	}
	e, snap = reopen(e)
	if !proto.Equal(snap.Security, testSecurity("bob")) || snap.SecurityVersion <= before.SecurityVersion {
		t.Fatalf("reopened after a second write: %v at version %d", snap.Security, snap.SecurityVersion)
	}

	// A damaged security file is an error, not an empty record.
	e.Close()
	if err := os.WriteFile(filepath.Join(dir, embeddedSecurityFile), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := OpenEmbedded(dir, self); err == nil {
		e.Close()
		t.Fatal("opened a store with a truncated security file")
	}
}
