package coordinator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// Keeping every group's state inside the retention of __consumer_offsets.
// Sluice does not compact the partition: retention deletes its oldest
// records, which may be the latest of a group that has not changed since
// (a commit a week ago is as much acknowledged as one a second ago). So
// every third of the retention (--offsets-retention) each group's current
// state is written again: the newest copy of every record is always
// younger than the retention, and a coordinator that loads the partition
// finds it all.
//
// What Kafka expires goes instead, as Kafka's offsets.retention.minutes
// says: an offset committed longer than the retention ago, of a group
// that has had no members for as long (since its coordinator last saw
// one, or started). Once a group without members has no offsets left, it
// is deleted. Tombstones take their place, so a load never finds them.

type (
	// refreshDue: the host's time to have every group written again.
	refreshDue struct{}
	// refreshState asks a coordinator to write its group's state again.
	refreshState struct{}
)

// writeBatchBytes bounds one write of group records, well below the 1 MiB
// messages of __consumer_offsets; a single larger write (a whole consumer
// group) goes alone.
const writeBatchBytes = 256 << 10

// scheduleRefresh has the host woken for the next refresh.
func (h *groupHost) scheduleRefresh(ctx actor.Context) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	time.AfterFunc(h.cfg.Broker.OffsetsRetention/3, func() { root.Send(self, refreshDue{}) })
}

// onRefreshDue writes the groups no coordinator holds (loaded, never asked
// about since) from their loaded state, and has every coordinator write
// its own: only the owner of a group's state may write it, after its
// pending writes.
func (h *groupHost) onRefreshDue(ctx actor.Context) {
	now, retention := time.Now(), h.cfg.Broker.OffsetsRetention
	// Loaded groups have no members (those that had got a coordinator at
	// once): empty since the load at least.
	empty := now.Sub(h.started) >= retention
	var recs []groupRecord
	expired := 0
	for _, name := range slices.Sorted(maps.Keys(h.groups)) {
		g := h.groups[name]
		live, dead := expireOffsets(name, g.offsets, empty, now, retention)
		g.offsets = live
		recs = append(recs, dead...)
		if empty && len(live) == 0 {
			recs = append(recs, groupTombstones(name, g.meta != nil, g.consumer != nil)...)
			delete(h.groups, name)
			expired++
			continue
		}
		recs = append(recs, loadedRecords(name, g)...)
	}
	if expired > 0 {
		h.cfg.Broker.Logger.Info("groups expired: no members nor commits for the offsets retention", "partition", h.cfg.Partition,
			"groups", expired, "retention", retention)
		h.publish()
	}
	for _, chunk := range chunkRecords(recs) {
		h.produce(ctx, chunk, "writing groups again within the offsets retention")
	}
	for _, pid := range h.coordinators {
		ctx.Send(pid, refreshState{})
	}
	h.cfg.Broker.Logger.Debug("groups written again within the offsets retention", "partition", h.cfg.Partition,
		"loaded_groups", len(h.groups), "coordinators", len(h.coordinators))
	h.scheduleRefresh(ctx)
}

// loadedRecords is a loaded group's state as records.
func loadedRecords(name string, g *loadedGroup) []groupRecord {
	var recs []groupRecord
	if g.meta != nil {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: name}, Metadata: g.meta})
	}
	if g.consumer != nil {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: name}, ConsumerGroup: true, Consumer: g.consumer})
	}
	return append(recs, offsetRecords(name, g.offsets)...)
}

// expireOffsets splits a group's offsets into those kept and tombstones
// for those expired: committed a retention ago or more, in a group empty
// for as long.
func expireOffsets(group string, offsets map[cluster.TopicPartition]*messages.OffsetValue, empty bool, now time.Time,
	retention time.Duration) (map[cluster.TopicPartition]*messages.OffsetValue, []groupRecord) {
	if !empty {
		return offsets, nil
	}
	live := map[cluster.TopicPartition]*messages.OffsetValue{}
	var dead []groupRecord
	for tp, o := range offsets {
		if now.Sub(time.UnixMilli(o.CommitUnixMs)) >= retention {
			dead = append(dead, groupRecord{Key: &messages.GroupRecordKey{Group: group, Topic: tp.Topic, Partition: tp.Partition}, Deleted: true})
		} else {
			live[tp] = o
		}
	}
	return live, dead
}

// groupTombstones delete a group's membership records.
func groupTombstones(group string, classic, consumer bool) []groupRecord {
	var recs []groupRecord
	if classic {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: group}, Deleted: true})
	}
	if consumer {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: group}, ConsumerGroup: true, Deleted: true})
	}
	return recs
}

// offsetRecords is a group's committed offsets as records, in order.
func offsetRecords(group string, offsets map[cluster.TopicPartition]*messages.OffsetValue) []groupRecord {
	var recs []groupRecord
	for _, tp := range slices.SortedFunc(maps.Keys(offsets), func(a, b cluster.TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	}) {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: group, Topic: tp.Topic, Partition: tp.Partition},
			Offset: offsets[tp]})
	}
	return recs
}

// recordBytes estimates what a record takes in a batch.
func recordBytes(r groupRecord) int {
	n := 64 + len(r.Key.Group) + len(r.Key.Topic)
	if r.Offset != nil {
		n += len(r.Offset.Metadata)
	}
	if r.Metadata != nil {
		n += proto.Size(r.Metadata)
	}
	if r.Consumer != nil {
		n += proto.Size(r.Consumer)
	}
	return n
}

// chunkRecords splits records into batches of at most writeBatchBytes
// (a larger record alone), in order.
func chunkRecords(recs []groupRecord) [][]groupRecord {
	var chunks [][]groupRecord
	start, size := 0, 0
	for i, r := range recs {
		n := recordBytes(r)
		if i > start && size+n > writeBatchBytes {
			chunks = append(chunks, recs[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(recs) {
		chunks = append(chunks, recs[start:])
	}
	return chunks
}

// onRefreshState writes the group's state again once no write is pending,
// so that what it writes is the latest: a copy taken before a commit still
// on its way would land after it and undo it.
func (c *groupCoordinator) onRefreshState(ctx actor.Context) {
	c.refreshPending = true
	c.flushWrites(ctx)
}

// refreshRecords is the group's state as written last, as records: its
// membership (classic, as last persisted, not mid-rebalance; and of the
// consumer protocol, which every change writes) and its offsets, with
// tombstones for what expired; gone when the whole group expired.
func (c *groupCoordinator) refreshRecords(now time.Time) (recs []groupRecord, gone bool) {
	retention := c.cfg.Broker.OffsetsRetention
	empty := c.memberCount() == 0 && len(c.pushers) == 0 && now.Sub(c.activeAt) >= retention
	live, dead := expireOffsets(c.cfg.Group, c.offsets, empty, now, retention)
	consumer := c.cg != nil && c.cg.Epoch() > 0
	if empty && len(live) == 0 {
		return append(dead, groupTombstones(c.cfg.Group, c.persistedMeta != nil, consumer)...), true
	}
	if c.persistedMeta != nil {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group}, Metadata: c.persistedMeta})
	}
	if consumer {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group}, ConsumerGroup: true,
			Consumer: toWireConsumerGroup(c.cg.Snapshot())})
	}
	return append(append(recs, offsetRecords(c.cfg.Group, live)...), dead...), false
}

// startRefresh queues the refresh's writes, when one is asked for and
// nothing else is pending; a group that expired whole is deleted once
// its tombstones are written.
func (c *groupCoordinator) startRefresh(ctx actor.Context) {
	if !c.refreshPending || c.inflight || len(c.queue) > 0 {
		return
	}
	c.refreshPending = false
	recs, gone := c.refreshRecords(time.Now())
	chunks := chunkRecords(recs)
	for i, chunk := range chunks {
		last := i == len(chunks)-1
		c.queue = append(c.queue, pendingWrite{records: chunk, done: func(err error) {
			switch {
			case err != nil:
				c.cfg.Broker.Logger.Warn("writing a group again within the offsets retention failed; the next refresh tries again",
					"group", c.cfg.Group, "error", err)
			case gone && last:
				// Its membership records are tombstones now: nothing to
				// write again, unless what came meanwhile writes it anew.
				c.persistedMeta = nil
				if c.cg != nil && c.cg.Len() == 0 {
					c.cg = nil
				}
				if len(c.queue) > 0 || c.memberCount() > 0 {
					return // a request came meanwhile: the group lives on
				}
				c.cfg.Broker.Logger.Info("group expired: no members nor commits for the offsets retention", "group", c.cfg.Group,
					"retention", c.cfg.Broker.OffsetsRetention)
				ctx.Send(ctx.Parent(), groupDeleted{group: c.cfg.Group})
				ctx.Stop(ctx.Self())
			}
		}})
	}
}

// takeWrites takes the queued writes of the next batch: in order, up to
// writeBatchBytes, at least one.
func (c *groupCoordinator) takeWrites() []pendingWrite {
	size, n := 0, 0
	for n < len(c.queue) {
		w := 0
		for _, r := range c.queue[n].records {
			w += recordBytes(r)
		}
		if n > 0 && size+w > writeBatchBytes {
			break
		}
		size += w
		n++
	}
	batch := c.queue[:n:n]
	c.queue = c.queue[n:]
	return batch
}

// produce writes records to the host's partition beside it, logging a
// failure with what.
func (h *groupHost) produce(ctx actor.Context, recs []groupRecord, what string) {
	req := &messages.ProduceRequest{Topic: actors.OffsetsTopic, Partition: h.cfg.Partition, Acks: -1,
		TimeoutMs: 10000, Records: encodeGroupRecords(recs)}
	reply.Ask(ctx, h.cfg.BrokerPID, req, 15*time.Second, func(res any, err error) {
		if err == nil {
			err = produceError(res)
		}
		if err != nil {
			h.cfg.Broker.Logger.Warn(what+" failed", "partition", h.cfg.Partition, "error", err)
		}
	})
}

// produceError is the error of a produce's answer (nil: written).
func produceError(res any) error {
	resp, ok := res.(*messages.ProduceResponse)
	if !ok {
		return fmt.Errorf("unexpected answer %T", res)
	}
	return resp.Error.Err(resp.ErrorMessage)
}
