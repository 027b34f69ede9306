package consul

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// Load implements MetadataStore.
func (c *Backend) Load(ctx context.Context) (*cluster.Snapshot, error) {
	return c.snapshot(ctx, 0, false)
}

// Watch implements MetadataStore with a blocking query on the prefix.
func (c *Backend) Watch(ctx context.Context, afterIndex uint64) (*cluster.Snapshot, error) {
	return c.snapshot(ctx, afterIndex, true)
}

// snapshot lists the whole prefix once, blocking until Consul's index passes
// afterIndex when block is set.
func (c *Backend) snapshot(ctx context.Context, afterIndex uint64, block bool) (*cluster.Snapshot, error) {
	if c.isClosed() {
		return nil, cluster.ErrClosed
	}
	wait, base := c.metaIdx.wait(afterIndex)
	if !block {
		wait = 0
	}
	q := &api.QueryOptions{WaitIndex: wait}
	var cctx context.Context
	var cancel context.CancelFunc
	if wait > 0 {
		q.WaitTime = watchWait
		cctx, cancel = c.blocking(ctx, watchWait)
	} else {
		cctx, cancel = c.call(ctx)
	}
	pairs, meta, err := c.client.KV().List(c.prefix, q.WithContext(cctx))
	cancel()
	if err != nil {
		return nil, c.failed(ctx, fmt.Errorf("consul: list %s: %w", c.prefix, err))
	}
	snap, err := c.decode(pairs)
	if err != nil {
		return nil, err
	}
	snap.Index, snap.Regressed = c.metaIdx.observeMarked(wait, base, meta.LastIndex, storeMark(pairs, c.key(keyClusterID)))
	if snap.Regressed {
		c.log.Warn("Consul's metadata store was restored, wiped or replaced: its index went backwards, or its cluster id key is gone or another", "index", meta.LastIndex, "waited_on", wait)
	}
	return snap, nil
}

// storeMark is the ModifyIndex of the store's cluster id key among pairs,
// 0 when it has none: the key is written once, so another value means
// another store (see indexMap).
func storeMark(pairs api.KVPairs, key string) uint64 {
	for _, kv := range pairs {
		if kv.Key == key {
			return kv.ModifyIndex
		}
	}
	return 0
}

// decode builds a snapshot from the listed keys. Partitions of a topic
// that does not exist are hidden: leftovers of a creation that failed
// half-way (see CreateTopic).
func (c *Backend) decode(pairs api.KVPairs) (*cluster.Snapshot, error) {
	snap := &cluster.Snapshot{Topics: map[string]*messages.TopicRecord{}, Partitions: map[cluster.TopicPartition]cluster.Partition{},
		Deleted: map[string]*messages.TopicDeletion{}, Controller: cluster.Controller{ID: -1}}
	for _, kv := range pairs {
		name := strings.TrimPrefix(kv.Key, c.prefix)
		switch {
		case name == keyClusterID:
			snap.ClusterID = string(kv.Value)
			c.bindClusterID(kv)
		case name == keyController:
			if id, err := strconv.ParseInt(strings.TrimSpace(string(kv.Value)), 10, 32); err == nil && kv.Session != "" {
				snap.Controller.ID = int32(id)
			}
		case name == keyControllerEpoch:
			snap.Controller.Epoch, _ = strconv.ParseInt(strings.TrimSpace(string(kv.Value)), 10, 64)
		case name == keySecurity:
			rec := &messages.SecurityRecord{}
			if err := proto.Unmarshal(kv.Value, rec); err != nil {
				return nil, fmt.Errorf("consul key %s is not a SecurityRecord: %w", kv.Key, err)
			}
			snap.Security, snap.SecurityVersion = rec, kv.ModifyIndex
		case strings.HasPrefix(name, "topics/"):
			t := &messages.TopicRecord{}
			if err := proto.Unmarshal(kv.Value, t); err != nil {
				return nil, fmt.Errorf("consul key %s is not a TopicRecord: %w", kv.Key, err)
			}
			snap.Topics[strings.TrimPrefix(name, "topics/")] = t
		case strings.HasPrefix(name, "partitions/"):
			st := &messages.PartitionState{}
			if err := proto.Unmarshal(kv.Value, st); err != nil {
				return nil, fmt.Errorf("consul key %s is not a PartitionState: %w", kv.Key, err)
			}
			snap.Partitions[cluster.TopicPartition{Topic: st.Topic, Partition: st.Partition}] = cluster.Partition{State: st, Version: kv.ModifyIndex}
		case strings.HasPrefix(name, deletedPrefix):
			d := &messages.TopicDeletion{}
			if err := proto.Unmarshal(kv.Value, d); err != nil {
				return nil, fmt.Errorf("consul key %s is not a TopicDeletion: %w", kv.Key, err)
			}
			snap.Deleted[d.TopicId] = d
		}
	}
	for tp := range snap.Partitions {
		if _, ok := snap.Topics[tp.Topic]; !ok {
			delete(snap.Partitions, tp)
		}
	}
	return snap, nil
}

// CreateClusterID implements MetadataStore: a fresh id unless the store has
// one (or another broker got there first), then the stored one.
func (c *Backend) CreateClusterID(ctx context.Context) (string, error) {
	cctx, cancel := c.call(ctx)
	defer cancel()
	// CAS on index 0: only if the key does not exist.
	_, _, err := c.client.KV().CAS(&api.KVPair{Key: c.key(keyClusterID), Value: []byte(cluster.NewID())}, (&api.WriteOptions{}).WithContext(cctx))
	if err != nil {
		return "", c.failed(ctx, fmt.Errorf("consul: create cluster id: %w", err))
	}
	kv, _, err := c.client.KV().Get(c.key(keyClusterID), (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx))
	if err != nil {
		return "", c.failed(ctx, fmt.Errorf("consul: read cluster id: %w", err))
	}
	if kv == nil || len(kv.Value) == 0 {
		return "", errors.New("consul: the cluster id vanished right after it was created")
	}
	c.bindClusterID(kv)
	return string(kv.Value), nil
}

// checkTopicName keeps names usable as one Consul key segment.
func checkTopicName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("topic name %q cannot be stored in Consul", name)
	}
	return nil
}

// CreateTopic implements MetadataStore. The topic key is written last, in
// the same transaction as the last partitions: it is the commit point. A
// topic with more partitions than one transaction takes is written in
// several, each checking the topic is still absent; partitions without
// their topic are invisible to Load and are cleared by the next attempt.
func (c *Backend) CreateTopic(ctx context.Context, f cluster.Fence, t *messages.TopicRecord, parts []*messages.PartitionState) error {
	if err := checkTopicName(t.Name); err != nil {
		return err
	}
	topicValue, err := proto.Marshal(t)
	if err != nil {
		return err
	}
	exists := func(string) error { return fmt.Errorf("%w: %q", cluster.ErrTopicExists, t.Name) }
	for first := true; ; first = false {
		tx, err := c.fencedTxn(f)
		if err != nil {
			return err
		}
		tx.add(&api.KVTxnOp{Verb: api.KVCheckNotExists, Key: c.key(topicKey(t.Name))}, exists)
		if first {
			tx.add(&api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.key(partitionsPrefix(t.Name))}, nil)
		}
		// Leave room for the topic key.
		for len(parts) > 0 && len(tx.ops) < consulMaxTxnOps-1 {
			p := parts[0]
			if p.Topic != t.Name {
				return fmt.Errorf("partition %s does not belong to topic %q", cluster.TopicPartition{Topic: p.Topic, Partition: p.Partition}, t.Name)
			}
			v, err := proto.Marshal(p)
			if err != nil {
				return err
			}
			tx.add(&api.KVTxnOp{Verb: api.KVSet, Key: c.key(partitionKey(p.Topic, p.Partition)), Value: v}, nil)
			parts = parts[1:]
		}
		last := len(parts) == 0
		if last {
			tx.add(&api.KVTxnOp{Verb: api.KVSet, Key: c.key(topicKey(t.Name)), Value: topicValue}, nil)
		}
		if _, err := c.commit(ctx, tx); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// DeleteTopic implements MetadataStore: the topic record is read first for
// its id, then deleted (if unchanged) with its partitions, and the deletion
// recorded under deleted_topics/<topic id>, in one transaction.
func (c *Backend) DeleteTopic(ctx context.Context, f cluster.Fence, name string) error {
	if err := checkTopicName(name); err != nil {
		return err
	}
	cctx, cancel := c.call(ctx)
	kv, _, err := c.client.KV().Get(c.key(topicKey(name)), (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx))
	cancel()
	if err != nil {
		return c.failed(ctx, fmt.Errorf("consul: read topic %s: %w", name, err))
	}
	if kv == nil {
		return fmt.Errorf("%w: %q", cluster.ErrTopicNotFound, name)
	}
	t := &messages.TopicRecord{}
	if err := proto.Unmarshal(kv.Value, t); err != nil {
		return fmt.Errorf("consul key %s is not a TopicRecord: %w", kv.Key, err)
	}
	marker, err := proto.Marshal(&messages.TopicDeletion{Name: name, TopicId: t.TopicId, DeletedUnixMs: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	tx, err := c.fencedTxn(f)
	if err != nil {
		return err
	}
	tx.add(&api.KVTxnOp{Verb: api.KVDeleteCAS, Key: c.key(topicKey(name)), Index: kv.ModifyIndex},
		func(string) error {
			return fmt.Errorf("%w: topic %q changed while it was being deleted", cluster.ErrConflict, name)
		})
	tx.add(&api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.key(partitionsPrefix(name))}, nil)
	tx.add(&api.KVTxnOp{Verb: api.KVSet, Key: c.key(deletedPrefix + t.TopicId), Value: marker}, nil)
	_, err = c.commit(ctx, tx)
	return err
}

// UpdateTopic implements MetadataStore. Added partitions' states go first,
// in as many transactions as they need, each checking that the topic
// record is unchanged; the record itself goes last with a check-and-set, so
// the topic grows only when every new partition has its state.
func (c *Backend) UpdateTopic(ctx context.Context, f cluster.Fence, prev, next *messages.TopicRecord, added []*messages.PartitionState) error {
	if err := checkTopicName(prev.Name); err != nil {
		return err
	}
	if prev.Name != next.Name {
		return fmt.Errorf("cannot rename topic %q to %q", prev.Name, next.Name)
	}
	cctx, cancel := c.call(ctx)
	kv, _, err := c.client.KV().Get(c.key(topicKey(prev.Name)), (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx))
	cancel()
	if err != nil {
		return c.failed(ctx, fmt.Errorf("consul: read topic %s: %w", prev.Name, err))
	}
	if kv == nil {
		return fmt.Errorf("%w: %q", cluster.ErrTopicNotFound, prev.Name)
	}
	cur := &messages.TopicRecord{}
	if err := proto.Unmarshal(kv.Value, cur); err != nil {
		return fmt.Errorf("consul key %s is not a TopicRecord: %w", kv.Key, err)
	}
	if !proto.Equal(cur, prev) {
		return fmt.Errorf("%w: topic %q changed", cluster.ErrConflict, prev.Name)
	}
	value, err := proto.Marshal(next)
	if err != nil {
		return err
	}
	changed := func(string) error { return fmt.Errorf("%w: topic %q changed", cluster.ErrConflict, prev.Name) }
	for {
		tx, err := c.fencedTxn(f)
		if err != nil {
			return err
		}
		tx.add(&api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.key(topicKey(prev.Name)), Index: kv.ModifyIndex}, changed)
		for len(added) > 0 && len(tx.ops) < consulMaxTxnOps-1 {
			p := added[0]
			if p.Topic != prev.Name {
				return fmt.Errorf("partition %s does not belong to topic %q", cluster.TopicPartition{Topic: p.Topic, Partition: p.Partition}, prev.Name)
			}
			v, err := proto.Marshal(p)
			if err != nil {
				return err
			}
			tx.add(&api.KVTxnOp{Verb: api.KVSet, Key: c.key(partitionKey(p.Topic, p.Partition)), Value: v}, nil)
			added = added[1:]
		}
		last := len(added) == 0
		if last {
			tx.add(&api.KVTxnOp{Verb: api.KVCAS, Key: c.key(topicKey(prev.Name)), Value: value, Index: kv.ModifyIndex}, changed)
		}
		if _, err := c.commit(ctx, tx); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// ConsulMaxPartitionUpdates is the most updates one UpdatePartitions call
// takes on Consul: they have to fit one transaction, with the fence check.
const ConsulMaxPartitionUpdates = consulMaxTxnOps - 1

// UpdatePartitions implements MetadataStore: one transaction of
// check-and-set operations, at most ConsulMaxPartitionUpdates of them.
func (c *Backend) UpdatePartitions(ctx context.Context, f cluster.Fence, updates []cluster.PartitionUpdate) error {
	if len(updates) > ConsulMaxPartitionUpdates {
		return fmt.Errorf("%d partition updates in one call: Consul takes at most %d at once", len(updates), ConsulMaxPartitionUpdates)
	}
	tx, err := c.fencedTxn(f)
	if err != nil {
		return err
	}
	for _, u := range updates {
		tp := cluster.TopicPartition{Topic: u.State.Topic, Partition: u.State.Partition}
		if err := checkTopicName(tp.Topic); err != nil {
			return err
		}
		if u.ExpectVersion == 0 {
			// CAS on index 0 would create the key; versions are never 0.
			return fmt.Errorf("%w: %s: version 0 does not exist", cluster.ErrConflict, tp)
		}
		v, err := proto.Marshal(u.State)
		if err != nil {
			return err
		}
		want := u.ExpectVersion
		tx.add(&api.KVTxnOp{Verb: api.KVCAS, Key: c.key(partitionKey(tp.Topic, tp.Partition)), Value: v, Index: want},
			func(string) error {
				return fmt.Errorf("%w: %s is no longer at version %d (or does not exist)", cluster.ErrConflict, tp, want)
			})
	}
	_, err = c.commit(ctx, tx)
	return err
}

// UpdateSecurity implements MetadataStore: one fenced check-and-set of the
// security key. Consul's CAS on index 0 writes only if the key is absent,
// which is exactly expectVersion 0's meaning.
func (c *Backend) UpdateSecurity(ctx context.Context, f cluster.Fence, rec *messages.SecurityRecord, expectVersion uint64) error {
	if rec == nil {
		rec = &messages.SecurityRecord{}
	}
	v, err := proto.Marshal(rec)
	if err != nil {
		return err
	}
	tx, err := c.fencedTxn(f)
	if err != nil {
		return err
	}
	tx.add(&api.KVTxnOp{Verb: api.KVCAS, Key: c.key(keySecurity), Value: v, Index: expectVersion},
		func(string) error {
			if expectVersion == 0 {
				return fmt.Errorf("%w: a security record is already stored", cluster.ErrConflict)
			}
			return fmt.Errorf("%w: the security record is no longer at version %d (or does not exist)", cluster.ErrConflict, expectVersion)
		})
	_, err = c.commit(ctx, tx)
	return err
}

// errCASMoved: the counter changed between read and write; read again.
var errCASMoved = errors.New("counter moved")

// AllocateProducerIDs implements MetadataStore: a check-and-set loop on the
// producer_ids counter, fenced by the controller's lock.
func (c *Backend) AllocateProducerIDs(ctx context.Context, f cluster.Fence, count, atLeast int64) (int64, error) {
	if count < 1 {
		return 0, fmt.Errorf("AllocateProducerIDs(%d): count must be positive", count)
	}
	return c.addToCounter(ctx, keyProducerIDs, max(1, atLeast), count, &f)
}

// addToCounter adds delta to the decimal counter name with a check-and-set
// loop and returns its value before the addition. The value is taken to be
// at least def (also when the key is absent).
// With a fence, the write also checks the controller still holds the lock.
func (c *Backend) addToCounter(ctx context.Context, name string, def, delta int64, f *cluster.Fence) (int64, error) {
	for {
		value, index, err := c.readCounter(ctx, name, def)
		if err != nil {
			return 0, err
		}
		value = max(value, def)
		if value > (1<<63-1)-delta {
			return 0, fmt.Errorf("counter %s exhausted", name)
		}
		tx := &txn{}
		if f != nil {
			if tx, err = c.fencedTxn(*f); err != nil {
				return 0, err
			}
		}
		tx.add(&api.KVTxnOp{Verb: api.KVCAS, Key: c.key(name), Value: []byte(strconv.FormatInt(value+delta, 10)), Index: index},
			func(string) error { return errCASMoved })
		switch _, err := c.commit(ctx, tx); {
		case errors.Is(err, errCASMoved):
			continue
		case err != nil:
			return 0, err
		}
		return value, nil
	}
}

// readCounter reads a decimal counter and its ModifyIndex (0 when the key
// does not exist, its value then being def).
func (c *Backend) readCounter(ctx context.Context, name string, def int64) (int64, uint64, error) {
	cctx, cancel := c.call(ctx)
	defer cancel()
	kv, _, err := c.client.KV().Get(c.key(name), (&api.QueryOptions{}).WithContext(cctx))
	if err != nil {
		return 0, 0, c.failed(ctx, fmt.Errorf("consul: read %s: %w", c.key(name), err))
	}
	if kv == nil {
		return def, 0, nil
	}
	v, err := strconv.ParseInt(string(kv.Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("consul key %s: %q is not a number", kv.Key, kv.Value)
	}
	return v, kv.ModifyIndex, nil
}
