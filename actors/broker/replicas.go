package broker

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/controller"
	"github.com/sluicemq/sluice/actors/partition"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/storage/replicadir"
)

// The replicas this broker hosts: one partition actor each, started,
// restarted and removed as the metadata says.

func (b *brokerActor) partitionDir(tp cluster.TopicPartition) string {
	return filepath.Join(b.cfg.DataDir, "topics", fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
}

// onMetadata brings local replica actors in line with the snapshot: start
// the ones assigned here, hand each its latest state, and stop (deleting
// their data) only those whose deletion the metadata records.
//
// A snapshot of another cluster, or of a store that lost its cluster id
// (a wiped or restarted -dev Consul, a wrong --cluster), is not acted on at
// all: the broker goes on with the last metadata of its own cluster.
func (b *brokerActor) onMetadata(ctx actor.Context, snap *cluster.Snapshot) {
	if b.stopping {
		return
	}
	if snap.ClusterID != b.cfg.ClusterID {
		if !b.foreign || time.Since(b.lastForeignLog) >= foreignLogEvery {
			b.lastForeignLog = time.Now()
			b.cfg.Logger.Error("the metadata store does not hold this broker's cluster: not acting on it; every partition is kept as it is",
				"store_cluster_id", snap.ClusterID, "cluster_id", b.cfg.ClusterID, "code", messages.ErrorCode_INCONSISTENT_CLUSTER_ID,
				"hint", "the store lost its data or --consul/--cluster point at another one; restore it from a snapshot")
		}
		b.foreign = true
		return
	}
	if b.foreign {
		b.foreign = false
		b.cfg.Logger.Info("the metadata store holds this broker's cluster again", "cluster_id", snap.ClusterID)
	}
	if snap.Regressed {
		b.cfg.Logger.Warn("the metadata store was restored or replaced; its cluster id is this cluster's, going on", "index", snap.Index)
	}
	b.meta = snap
	defaultsMoved := b.onSecurity(snap)
	b.shared.published.Store(snap)
	b.startAssigned(ctx, snap, defaultsMoved)
	for tp, r := range b.replicas {
		part, ok := snap.Partitions[tp]
		switch {
		case deletionRecorded(snap, tp.Topic, r.topicID):
			b.removeReplica(ctx, tp, true)
		case ok && part.State.TopicId == r.topicID && !slices.Contains(part.State.Replicas, b.cfg.ID):
			// Moved to other brokers: the replica steps down first, so what
			// is queued for it is answered NOT_LEADER.
			if newerState(part.State, r.lastState) {
				r.lastState = part.State
				b.sendState(ctx, tp, r)
			}
			b.removeReplica(ctx, tp, true)
		case !ok && !b.missing[tp]:
			b.missing[tp] = true
			b.cfg.Logger.Warn("the metadata lacks a partition held here, and records no deletion of it: keeping its data",
				"partition", tp, "topic_id", r.topicID)
		}
	}
	if !b.cleaned {
		b.cleaned = true
		b.scanDeletedDirs(ctx, snap)
	}
	if b.controller != nil {
		ctx.Send(b.controller, &controller.MetadataUpdated{Snap: snap})
	}
	b.publishMetrics()
}

// startAssigned starts the replicas the snapshot assigns here that are not
// running and hands each running one its latest state, and its topic's
// configuration when it (or the defaults, configsMoved) changed.
func (b *brokerActor) startAssigned(ctx actor.Context, snap *cluster.Snapshot, configsMoved bool) {
	for tp, part := range snap.Partitions {
		st := part.State
		if !slices.Contains(st.Replicas, b.cfg.ID) || b.removing[tp] != nil {
			continue // not here, or started once its removal has ended
		}
		if t := snap.Topics[tp.Topic]; t == nil || tp.Partition >= t.Partitions {
			continue // a partition being added is started once its topic counts it
		}
		r := b.replicas[tp]
		if r != nil && r.topicID != st.TopicId {
			// The topic was deleted and created again under its name: the
			// new replica starts once the old one's files are gone.
			b.removeReplica(ctx, tp, true)
			continue
		}
		if r == nil {
			var err error
			if r, err = b.startReplica(ctx, tp, st.TopicId); err != nil {
				b.cfg.Logger.Error("cannot start partition", "partition", tp, "error", err)
				continue
			}
		}
		delete(b.missing, tp)
		configs := snap.Topics[tp.Topic].Configs
		switch {
		case r.lastState != st && newerState(st, r.lastState):
			r.lastState = st
			b.sendState(ctx, tp, r)
		case r.lastState != nil && (configsMoved || !maps.Equal(r.configs, configs)):
			b.sendState(ctx, tp, r) // the topic's configuration changed
		}
	}
}

// foreignLogEvery spaces the errors about a store of another cluster.
const foreignLogEvery = 30 * time.Second

// deletionRecorded reports whether the metadata records that the topic
// with id topicID (named topic) was deleted: a deletion record, or the name
// now taken by a topic with another id. Data is deleted for nothing else.
func deletionRecorded(snap *cluster.Snapshot, topic, topicID string) bool {
	if _, ok := snap.Deleted[topicID]; ok {
		return true
	}
	t, ok := snap.Topics[topic]
	return ok && topicID != "" && t.TopicId != topicID
}

// onReplicaStarted re-sends a (re)started replica its current state.
func (b *brokerActor) onReplicaStarted(ctx actor.Context, tp cluster.TopicPartition) {
	r := b.replicas[tp]
	if r == nil || r.lastState == nil || b.meta == nil {
		return
	}
	b.sendState(ctx, tp, r)
}

// topicConfig parses a topic's stored configuration over the defaults;
// __consumer_offsets keeps its records for --offsets-retention, whatever
// the defaults (its coordinators write every group's state again within
// it).
func (b *brokerActor) topicConfig(topic string) actors.TopicConfig {
	tc := b.parsedTopicConfig(topic)
	if topic == actors.OffsetsTopic {
		tc.RetentionMs, tc.RetentionBytes = b.cfg.OffsetsRetention.Milliseconds(), -1
	}
	return tc
}

func (b *brokerActor) parsedTopicConfig(topic string) actors.TopicConfig {
	t := b.meta.Topics[topic]
	if t == nil {
		return b.topicDefaults
	}
	tc, err := actors.ParseTopicConfig(b.topicDefaults, t.Configs)
	if err != nil {
		b.cfg.Logger.Warn("stored topic config is invalid; using defaults", "topic", topic, "error", err)
		return b.topicDefaults
	}
	return tc
}

// startReplica starts the actor of a replica assigned here; the actor
// claims its directory (partition.claimDir).
func (b *brokerActor) startReplica(ctx actor.Context, tp cluster.TopicPartition, topicID string) (*replica, error) {
	r := &replica{topicID: topicID, dir: b.partitionDir(tp), status: &atomic.Pointer[messages.ReplicaState]{}, fetched: &atomic.Int64{}}
	if err := b.spawnReplica(ctx, tp, r); err != nil {
		return nil, err
	}
	b.replicas[tp] = r
	return r, nil
}

// spawnReplica starts the partition actor of r.
func (b *brokerActor) spawnReplica(ctx actor.Context, tp cluster.TopicPartition, r *replica) error {
	props := partition.Props(partition.Config{
		TP: tp, TopicID: r.topicID, BrokerID: b.cfg.ID, Dir: r.dir, Topic: b.topicConfig(tp.Topic),
		Broker: b.cfg, Status: r.status, Fetched: r.fetched, FailedLogs: b.shared.failed, Logger: b.cfg.Logger,
	}, actor.WithMailbox(b.cfg.Metrics.Mailbox()))
	pid, err := ctx.SpawnNamed(props, fmt.Sprintf("p/%s/%d", tp.Topic, tp.Partition))
	if err != nil {
		return err
	}
	r.pid = pid
	return nil
}

// onChildTerminated finishes a stop the broker asked for (a controller
// handed over, a replica removed) and starts again a child that ended
// while the broker still routes to it. Failures never get here (the
// supervisor strategy restarts a failed child in place), no actor stops
// itself, and the guard lets no other process stop one or report one's
// end: this is the broker keeping its children in line with the metadata,
// as it does when the metadata changes.
func (b *brokerActor) onChildTerminated(ctx actor.Context, who *actor.PID) {
	if b.stopping {
		return
	}
	if b.controller != nil && who.Equal(b.controller) {
		b.controller = nil
		defer b.publishMetrics()
		lead := b.pendingController
		if lead == nil && b.lead != nil && !isClosed(b.lead.Lost) {
			b.cfg.Logger.Error("controller actor stopped; starting it again")
			lead = b.lead
		}
		if lead != nil {
			b.spawnController(ctx, lead)
		}
		return
	}
	for tp, rm := range b.removing {
		if rm.pid != nil && rm.pid.Equal(who) {
			b.onRemovalStopped(ctx, tp, rm)
			return
		}
	}
	for tp, r := range b.replicas {
		if r.pid.Equal(who) {
			b.cfg.Logger.Error("partition actor stopped; starting it again", "partition", tp)
			b.respawnReplica(ctx, tp, r)
			return
		}
	}
	for p, h := range b.groupHosts {
		if h.pid.Equal(who) {
			b.cfg.Logger.Error("group host stopped; starting it again", "partition", p)
			delete(b.groupHosts, p)
			tp := cluster.TopicPartition{Topic: actors.OffsetsTopic, Partition: p}
			if r := b.replicas[tp]; r != nil {
				b.syncGroupHost(ctx, tp, r.lastState)
			}
			return
		}
	}
}

// respawnReplica is a retry of starting the partition actor of a replica
// the broker still holds.
type respawnReplica struct{ tp cluster.TopicPartition }

// respawnReplica starts r's actor again; while that fails the replica stays
// routed (requests to it time out rather than hear it does not exist) and
// the start is tried again after a pause.
func (b *brokerActor) respawnReplica(ctx actor.Context, tp cluster.TopicPartition, r *replica) {
	if err := b.spawnReplica(ctx, tp, r); err != nil {
		b.cfg.Logger.Error("cannot start partition; trying again in a second", "partition", tp, "error", err)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(time.Second, func() { root.Send(self, &respawnReplica{tp: tp}) })
		return
	}
	// The new actor asks for its state when it has started.
}

func (b *brokerActor) onRespawnReplica(ctx actor.Context, tp cluster.TopicPartition) {
	r := b.replicas[tp]
	if r == nil || b.stopping {
		return // removed meanwhile
	}
	b.respawnReplica(ctx, tp, r)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// removal is a replica on its way out: its actor stops, then, when
// deleteData, its files go (pid is nil for the directory of a topic
// deleted while the broker was down: no actor ever ran for it). Until then
// no replica of its partition starts here (the actor's name and directory
// are still taken).
type removal struct {
	pid        *actor.PID
	dir        string
	deleteData bool
}

// replicaRemoved reports that a removed replica's files are gone (err: why
// they are not).
type replicaRemoved struct {
	tp  cluster.TopicPartition
	err error
}

// removeReplica stops a replica actor and, when deleteData, removes its
// files once the actor has closed its log (onRemovalStopped); the broker
// goes on serving meanwhile.
func (b *brokerActor) removeReplica(ctx actor.Context, tp cluster.TopicPartition, deleteData bool) {
	r := b.replicas[tp]
	if r == nil {
		return
	}
	delete(b.replicas, tp)
	if tp.Topic == actors.OffsetsTopic {
		b.syncGroupHost(ctx, tp, nil)
	}
	b.removing[tp] = &removal{pid: r.pid, dir: r.dir, deleteData: deleteData}
	// A poison pill, not a stop: the requests routed to the replica before
	// it are answered first (a stop would drop them, leaving their senders
	// to time out), and nothing is routed to it after.
	ctx.Poison(r.pid)
}

// onRemovalStopped goes on with a removal once its actor has stopped: the
// files are deleted beside the actor.
func (b *brokerActor) onRemovalStopped(ctx actor.Context, tp cluster.TopicPartition, rm *removal) {
	if !rm.deleteData {
		b.onReplicaRemoved(ctx, &replicaRemoved{tp: tp})
		return
	}
	self, root, dir, closings := ctx.Self(), ctx.ActorSystem().Root, rm.dir, b.cfg.Closings
	go func() {
		closings.Wait(dir) // the stopped actor closes its log beside it
		root.Send(self, &replicaRemoved{tp: tp, err: os.RemoveAll(dir)})
	}()
}

// onReplicaRemoved ends a removal and starts the partition's replica again
// if the metadata assigns it here meanwhile (a topic deleted and created
// again under its name).
func (b *brokerActor) onReplicaRemoved(ctx actor.Context, msg *replicaRemoved) {
	rm := b.removing[msg.tp]
	if rm == nil {
		return
	}
	delete(b.removing, msg.tp)
	switch {
	case msg.err != nil:
		b.cfg.Logger.Error("cannot remove partition data", "dir", rm.dir, "error", msg.err)
	case rm.deleteData:
		b.cfg.Logger.Info("removed partition", "partition", msg.tp)
	}
	if b.meta != nil && !b.stopping && !b.foreign {
		b.startAssigned(ctx, b.meta, false)
	}
}

// scanDeletedDirs looks, beside the actor, for partition directories no
// replica owns whose topic's deletion the metadata records (topics deleted
// while this broker was down); the actor removes them when the result
// comes (onDeletedDirs). Anything else is kept.
func (b *brokerActor) scanDeletedDirs(ctx actor.Context, snap *cluster.Snapshot) {
	owned := map[string]bool{}
	for _, r := range b.replicas {
		owned[filepath.Base(r.dir)] = true
	}
	self, root, logger := ctx.Self(), ctx.ActorSystem().Root, b.cfg.Logger
	dir := filepath.Join(b.cfg.DataDir, "topics")
	go func() { root.Send(self, &deletedDirs{dirs: findDeletedDirs(dir, snap, owned, logger)}) }()
}

// deletedDirs are the partition directories of deleted topics a scan of
// the data directory found.
type deletedDirs struct {
	dirs map[cluster.TopicPartition]string
}

// findDeletedDirs lists the directories under root, except owned ones,
// whose topic id snap records as deleted.
func findDeletedDirs(root string, snap *cluster.Snapshot, owned map[string]bool, logger *slog.Logger) map[cluster.TopicPartition]string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	found := map[cluster.TopicPartition]string{}
	for _, e := range entries {
		if !e.IsDir() || owned[e.Name()] || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		id, err := replicadir.Dir(dir).TopicID()
		cut := strings.LastIndexByte(e.Name(), '-')
		part, perr := int64(-1), error(nil)
		if cut > 0 {
			part, perr = strconv.ParseInt(e.Name()[cut+1:], 10, 32)
		}
		if err != nil || perr != nil || part < 0 {
			logger.Warn("keeping a partition directory without a topic id", "dir", dir)
			continue
		}
		if !deletionRecorded(snap, e.Name()[:cut], id) {
			logger.Warn("keeping the data of a partition the metadata does not assign here, with no deletion recorded",
				"dir", dir, "topic_id", id)
			continue
		}
		found[cluster.TopicPartition{Topic: e.Name()[:cut], Partition: int32(part)}] = dir
	}
	return found
}

// onDeletedDirs removes, beside the actor, the directories of deleted
// topics found at start, as removals: no replica of their partitions
// starts here until they are gone. One a replica owns by now (its topic
// created again) is left to that replica, which clears old data itself.
func (b *brokerActor) onDeletedDirs(ctx actor.Context, msg *deletedDirs) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	for tp, dir := range msg.dirs {
		if b.replicas[tp] != nil || b.removing[tp] != nil || b.stopping {
			continue
		}
		b.cfg.Logger.Info("removing the data of a deleted topic", "dir", dir)
		b.removing[tp] = &removal{dir: dir, deleteData: true}
		go func() { root.Send(self, &replicaRemoved{tp: tp, err: os.RemoveAll(dir)}) }()
	}
}
