// Package storetest is the conformance suite every cluster.MetadataStore
// passes: the embedded store and Consul run the same tests.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// Store is one MetadataStore for the conformance suite.
type Store struct {
	Store cluster.MetadataStore
	Fence cluster.Fence
	// other is a second handle on the same metadata (a second backend), for
	// concurrent allocators; nil: use store twice.
	Other cluster.MetadataStore
	// lose makes fence stale (the controller loses its leadership); nil:
	// the store ignores fences.
	Lose func(t *testing.T)
}

func Topic(name string, partitions int32) (*messages.TopicRecord, []*messages.PartitionState) {
	t := &messages.TopicRecord{Name: name, TopicId: cluster.NewTopicID(), Partitions: partitions, ReplicationFactor: 1,
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
func Security(user string) *messages.SecurityRecord {
	return &messages.SecurityRecord{
		Acls: []*messages.AclBinding{{ResourceType: messages.AclResourceType_ACL_RESOURCE_TOPIC, ResourceName: "orders",
			PatternType: messages.AclPatternType_ACL_PATTERN_LITERAL, Principal: "User:" + user, Host: "*",
			Operation: messages.AclOperation_ACL_OPERATION_READ, Permission: messages.AclPermission_ACL_PERMISSION_ALLOW}},
		Users: []*messages.UserRecord{{Name: user, TokenSha256: "00ff", CreatedUnixMs: 1700000000000}},
	}
}

func Run(t *testing.T, open func(t *testing.T) Store) {
	ctx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	load := func(t *testing.T, s cluster.MetadataStore) *cluster.Snapshot {
		t.Helper()
		snap, err := s.Load(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	create := func(t *testing.T, u Store, name string, partitions int32) (*messages.TopicRecord, []*messages.PartitionState) {
		t.Helper()
		topic, parts := Topic(name, partitions)
		if err := u.Store.CreateTopic(ctx(t), u.Fence, topic, parts); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return topic, parts
	}

	t.Run("ClusterID", func(t *testing.T) {
		u := open(t)
		if id := load(t, u.Store).ClusterID; id != "" {
			t.Fatalf("a new store has cluster id %q before CreateClusterID", id)
		}
		id, err := u.Store.CreateClusterID(ctx(t))
		if err != nil || id == "" {
			t.Fatalf("CreateClusterID: %q, %v", id, err)
		}
		second := u.Store
		if u.Other != nil {
			second = u.Other
		}
		if again, err := second.CreateClusterID(ctx(t)); err != nil || again != id {
			t.Fatalf("second CreateClusterID: %q, %v; want the first one's %q", again, err, id)
		}
		if got := load(t, u.Store).ClusterID; got != id {
			t.Fatalf("loaded cluster id %q, want %q", got, id)
		}
	})

	t.Run("CreateAndLoad", func(t *testing.T) {
		u := open(t)
		if _, err := u.Store.CreateClusterID(ctx(t)); err != nil {
			t.Fatal(err)
		}
		topic, parts := create(t, u, "orders", 3)
		if err := u.Store.CreateTopic(ctx(t), u.Fence, topic, parts); !errors.Is(err, cluster.ErrTopicExists) {
			t.Fatalf("duplicate create: %v, want cluster.ErrTopicExists", err)
		}
		snap := load(t, u.Store)
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
		if again := load(t, u.Store); again.ClusterID != snap.ClusterID {
			t.Fatalf("cluster id changed from %s to %s", snap.ClusterID, again.ClusterID)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		u := open(t)
		deleted, _ := create(t, u, "a", 2)
		create(t, u, "ab", 2) // shares a prefix with "a"
		if err := u.Store.DeleteTopic(ctx(t), u.Fence, "a"); err != nil {
			t.Fatal(err)
		}
		if err := u.Store.DeleteTopic(ctx(t), u.Fence, "a"); !errors.Is(err, cluster.ErrTopicNotFound) {
			t.Fatalf("second delete: %v, want cluster.ErrTopicNotFound", err)
		}
		if err := u.Store.DeleteTopic(ctx(t), u.Fence, "never"); !errors.Is(err, cluster.ErrTopicNotFound) {
			t.Fatalf("delete of a missing topic: %v, want cluster.ErrTopicNotFound", err)
		}
		snap := load(t, u.Store)
		if _, ok := snap.Topics["a"]; ok || len(snap.PartitionsOf("ab")) != 2 || len(snap.Partitions) != 2 {
			t.Fatalf("after delete: topics %v, %d partitions", snap.Topics, len(snap.Partitions))
		}
		// The deletion is recorded, by topic id, for brokers that were down.
		if d := snap.Deleted[deleted.TopicId]; d == nil || d.Name != "a" || len(snap.Deleted) != 1 {
			t.Fatalf("deletion records %v, want one for a (%s)", snap.Deleted, deleted.TopicId)
		}
		// The name is free again.
		create(t, u, "a", 1)
		if n := len(load(t, u.Store).PartitionsOf("a")); n != 1 {
			t.Fatalf("re-created a has %d partitions", n)
		}
	})

	t.Run("ManyPartitions", func(t *testing.T) {
		// More than one Consul transaction holds.
		u := open(t)
		create(t, u, "wide", 300)
		if n := len(load(t, u.Store).PartitionsOf("wide")); n != 300 {
			t.Fatalf("%d partitions, want 300", n)
		}
		topic, parts := Topic("wide", 300)
		if err := u.Store.CreateTopic(ctx(t), u.Fence, topic, parts); !errors.Is(err, cluster.ErrTopicExists) {
			t.Fatalf("duplicate create: %v", err)
		}
		if err := u.Store.DeleteTopic(ctx(t), u.Fence, "wide"); err != nil {
			t.Fatal(err)
		}
		if snap := load(t, u.Store); len(snap.Partitions) != 0 {
			t.Fatalf("%d partitions left", len(snap.Partitions))
		}
	})

	t.Run("UpdateTopic", func(t *testing.T) {
		u := open(t)
		prev, _ := create(t, u, "grow", 2)
		// Grow from 2 to 100 partitions (more than one Consul transaction)
		// and change a config, in one update.
		next, all := Topic("grow", 100)
		next.TopicId = prev.TopicId
		next.Configs = map[string]string{"retention.ms": "5000", "cleanup.policy": "delete"}
		for _, p := range all {
			p.TopicId = prev.TopicId
		}
		if err := u.Store.UpdateTopic(ctx(t), u.Fence, prev, next, all[2:]); err != nil {
			t.Fatal(err)
		}
		snap := load(t, u.Store)
		if got := snap.Topics["grow"]; !proto.Equal(got, next) || len(snap.PartitionsOf("grow")) != 100 {
			t.Fatalf("after the update: %v with %d partitions", got, len(snap.PartitionsOf("grow")))
		}
		// An update from a stale record is refused, and changes nothing.
		stale := proto.Clone(next).(*messages.TopicRecord)
		stale.Configs = map[string]string{"retention.ms": "1"}
		if err := u.Store.UpdateTopic(ctx(t), u.Fence, prev, stale, nil); !errors.Is(err, cluster.ErrConflict) {
			t.Fatalf("update from a stale record: %v, want cluster.ErrConflict", err)
		}
		if err := u.Store.UpdateTopic(ctx(t), u.Fence, &messages.TopicRecord{Name: "never"}, &messages.TopicRecord{Name: "never"}, nil); !errors.Is(err, cluster.ErrTopicNotFound) {
			t.Fatalf("update of a missing topic: %v, want cluster.ErrTopicNotFound", err)
		}
		if got := load(t, u.Store).Topics["grow"]; !proto.Equal(got, next) {
			t.Fatalf("a refused update changed the record to %v", got)
		}
		if u.Lose != nil {
			u.Lose(t)
			if err := u.Store.UpdateTopic(ctx(t), u.Fence, next, stale, nil); !errors.Is(err, cluster.ErrFenced) {
				t.Fatalf("update by a deposed controller: %v, want cluster.ErrFenced", err)
			}
		}
	})

	t.Run("Watch", func(t *testing.T) {
		u := open(t)
		create(t, u, "before", 1)
		start := load(t, u.Store)
		// Nothing changes: Watch waits until its context ends (or returns
		// early with the same index).
		short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		snap, err := u.Store.Watch(short, start.Index)
		cancel()
		if err == nil && snap.Index != start.Index {
			t.Fatalf("watch without a change returned index %d, started at %d", snap.Index, start.Index)
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		got := make(chan *cluster.Snapshot, 1)
		errc := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			for {
				snap, err := u.Store.Watch(wctx, start.Index)
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
		if _, err := u.Store.Watch(ctx(t), 0); err != nil {
			t.Fatalf("watch from 0: %v", err)
		}
	})

	t.Run("UpdatePartitions", func(t *testing.T) {
		u := open(t)
		create(t, u, "t", 2)
		before := load(t, u.Store).PartitionsOf("t")
		moved := func(p cluster.Partition, leader int32) *messages.PartitionState {
			st := proto.Clone(p.State).(*messages.PartitionState)
			st.Leader, st.LeaderEpoch, st.PartitionEpoch = leader, st.LeaderEpoch+1, st.PartitionEpoch+1
			return st
		}
		ok := []cluster.PartitionUpdate{{State: moved(before[0], 7), ExpectVersion: before[0].Version}, {State: moved(before[1], 8), ExpectVersion: before[1].Version}}
		if err := u.Store.UpdatePartitions(ctx(t), u.Fence, ok); err != nil {
			t.Fatal(err)
		}
		mid := load(t, u.Store).PartitionsOf("t")
		for i, p := range mid {
			if !proto.Equal(p.State, ok[i].State) || p.Version == before[i].Version {
				t.Fatalf("partition %d after update: %v at version %d (was %d)", i, p.State, p.Version, before[i].Version)
			}
		}
		// One stale version: nothing is applied.
		stale := []cluster.PartitionUpdate{{State: moved(mid[0], 9), ExpectVersion: mid[0].Version}, {State: moved(mid[1], 9), ExpectVersion: before[1].Version}}
		err := u.Store.UpdatePartitions(ctx(t), u.Fence, stale)
		if !errors.Is(err, cluster.ErrConflict) {
			t.Fatalf("stale update: %v, want cluster.ErrConflict", err)
		}
		t.Logf("conflict: %v", err)
		after := load(t, u.Store).PartitionsOf("t")
		for i := range after {
			if !proto.Equal(after[i].State, mid[i].State) || after[i].Version != mid[i].Version {
				t.Fatalf("partition %d changed by a failed update: %v", i, after[i].State)
			}
		}
		missing := &messages.PartitionState{Topic: "t", Partition: 5}
		if err := u.Store.UpdatePartitions(ctx(t), u.Fence, []cluster.PartitionUpdate{{State: missing, ExpectVersion: mid[0].Version}}); !errors.Is(err, cluster.ErrConflict) {
			t.Fatalf("update of a missing partition: %v, want cluster.ErrConflict", err)
		}
	})

	t.Run("AllocateProducerIDs", func(t *testing.T) {
		u := open(t)
		a, err := u.Store.AllocateProducerIDs(ctx(t), u.Fence, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := u.Store.AllocateProducerIDs(ctx(t), u.Fence, 5, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a < 1 || b < a+10 {
			t.Fatalf("allocations at %d (10) and %d (5)", a, b)
		}
		// A broker that had ids up to 5000 gets a block from there on,
		// and the counter follows.
		c, err := u.Store.AllocateProducerIDs(ctx(t), u.Fence, 5, 5000)
		if err != nil || c < 5000 {
			t.Fatalf("allocation at least 5000: %d %v", c, err)
		}
		if d, err := u.Store.AllocateProducerIDs(ctx(t), u.Fence, 5, 0); err != nil || d < c+5 {
			t.Fatalf("allocation after one at %d: %d %v", c, d, err)
		}
		// Two allocators at once never hand out the same id.
		other := u.Other
		if other == nil {
			other = u.Store
		}
		var mu sync.Mutex
		var firsts []int64
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, s := range []cluster.MetadataStore{u.Store, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					first, err := s.AllocateProducerIDs(ctx(t), u.Fence, 3, 0)
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
		if snap := load(t, u.Store); snap.Security != nil || snap.SecurityVersion != 0 {
			t.Fatalf("a new store has security record %v at version %d", snap.Security, snap.SecurityVersion)
		}
		// wantSecurity checks what every handle on the store loads.
		wantSecurity := func(t *testing.T, rec *messages.SecurityRecord, version uint64) {
			t.Helper()
			for _, s := range []cluster.MetadataStore{u.Store, u.Other} {
				if s == nil {
					continue
				}
				if snap := load(t, s); !proto.Equal(snap.Security, rec) || snap.SecurityVersion != version {
					t.Fatalf("security record %v at version %d, want %v at %d", snap.Security, snap.SecurityVersion, rec, version)
				}
			}
		}
		first := Security("alice")
		if err := u.Store.UpdateSecurity(ctx(t), u.Fence, first, 0); err != nil {
			t.Fatalf("first write: %v", err)
		}
		v1 := load(t, u.Store).SecurityVersion
		if v1 == 0 {
			t.Fatal("a stored security record has version 0")
		}
		wantSecurity(t, first, v1)

		// Version 0 means "none stored yet": one is.
		if err := u.Store.UpdateSecurity(ctx(t), u.Fence, Security("bob"), 0); !errors.Is(err, cluster.ErrConflict) {
			t.Fatalf("second write with version 0: %v, want cluster.ErrConflict", err)
		}
		wantSecurity(t, first, v1)

		second := Security("bob")
		if err := u.Store.UpdateSecurity(ctx(t), u.Fence, second, v1); err != nil {
			t.Fatalf("write at the current version: %v", err)
		}
		v2 := load(t, u.Store).SecurityVersion
		if v2 <= v1 {
			t.Fatalf("version %d after a write at %d", v2, v1)
		}
		wantSecurity(t, second, v2)

		err := u.Store.UpdateSecurity(ctx(t), u.Fence, Security("carol"), v1)
		if !errors.Is(err, cluster.ErrConflict) {
			t.Fatalf("write at a stale version: %v, want cluster.ErrConflict", err)
		}
		t.Logf("conflict: %v", err)
		wantSecurity(t, second, v2)
	})

	t.Run("SecurityWatch", func(t *testing.T) {
		u := open(t)
		start := load(t, u.Store)
		got := make(chan *cluster.Snapshot, 1)
		errc := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			for {
				snap, err := u.Store.Watch(wctx, start.Index)
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
		rec := Security("alice")
		if err := u.Store.UpdateSecurity(ctx(t), u.Fence, rec, 0); err != nil {
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
		if u.Lose == nil {
			t.Skip("the store ignores fences")
		}
		if err := u.Store.UpdateSecurity(ctx(t), u.Fence, Security("alice"), 0); err != nil {
			t.Fatal(err)
		}
		v := load(t, u.Store).SecurityVersion
		u.Lose(t)
		// Fenced even where the write would also fail for its own reason.
		stale := map[string]error{
			"current version": u.Store.UpdateSecurity(ctx(t), u.Fence, Security("bob"), v),
			"stale version":   u.Store.UpdateSecurity(ctx(t), u.Fence, Security("bob"), v+1000),
			"zero fence":      u.Store.UpdateSecurity(ctx(t), cluster.Fence{}, Security("bob"), v),
		}
		for what, err := range stale {
			if !errors.Is(err, cluster.ErrFenced) || errors.Is(err, cluster.ErrConflict) {
				t.Errorf("write at the %s after losing leadership: %v, want cluster.ErrFenced only", what, err)
			}
		}
		if snap := load(t, u.Store); !proto.Equal(snap.Security, Security("alice")) || snap.SecurityVersion != v {
			t.Fatalf("a fenced write changed the security record to %v at version %d", snap.Security, snap.SecurityVersion)
		}
	})
}
