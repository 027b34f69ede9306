package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// HostConfig is what a group host starts with.
type HostConfig struct {
	// Partition of __consumer_offsets this host serves; its leader is local.
	Partition int32
	Broker    *actors.BrokerConfig
	// BrokerPID is the local broker actor: reads and writes of the offsets
	// partition go through it like any client's.
	BrokerPID *actor.PID
	// Meta is the broker's latest metadata (partition counts for assignments).
	Meta *atomic.Pointer[cluster.Snapshot]
	// Overview receives the list of groups, for ListGroups.
	Overview *atomic.Pointer[[]*messages.GroupOverview]
}

// loadedGroup is a group's state as replayed from the offsets partition.
type loadedGroup struct {
	meta    *messages.GroupMetadataValue
	offsets map[cluster.TopicPartition]*messages.OffsetValue
	// legacy holds the keys whose current value was read in the protobuf
	// format of earlier releases (a zero TopicPartition: the metadata).
	legacy map[cluster.TopicPartition]bool
	// consumer is the group's membership of Kafka's consumer protocol.
	consumer *messages.ConsumerGroupValue
}

type (
	// loadStep continues loading after a pause.
	loadStep struct{}
	// groupOverviewChanged is a coordinator reporting its group's summary.
	// groupOverviewChanged: a group's overview (nil: not to be listed).
	groupOverviewChanged struct {
		group    string
		overview *messages.GroupOverview
	}
	// groupDeleted: a coordinator deleted its group and stops.
	groupDeleted struct{ group string }
	// groupIdle: a coordinator holds nothing (see groupCoordinator.idle),
	// having handled as many requests as handled says.
	groupIdle struct {
		group   string
		pid     *actor.PID
		handled uint64
	}
)

// groupHost serves the consumer groups of one __consumer_offsets partition
// on its leader: it first replays the partition up to its log end (the
// new leader's log is the truth, committed or not yet), then runs one
// coordinator actor per group. Requests before the load ends get
// COORDINATOR_NOT_AVAILABLE.
type groupHost struct {
	cfg          HostConfig
	loaded       bool
	next         int64
	groups       map[string]*loadedGroup
	coordinators map[string]*actor.PID
	// forwarded counts the requests forwarded to each coordinator: one
	// that reports itself idle having handled them all has none on the way
	// and may stop.
	forwarded map[string]uint64
	overviews map[string]*messages.GroupOverview
	backoff   time.Duration
	started   time.Time
}

// HostProps is what the broker spawns the group host of an offsets
// partition it leads from.
func HostProps(cfg HostConfig) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &groupHost{cfg: cfg, groups: map[string]*loadedGroup{}, coordinators: map[string]*actor.PID{},
			forwarded: map[string]uint64{}, overviews: map[string]*messages.GroupOverview{}}
	})
}

func (h *groupHost) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		h.started = time.Now()
		h.load(ctx)
	case loadStep:
		h.load(ctx)
	case refreshDue:
		h.onRefreshDue(ctx)
	case groupOverviewChanged:
		if msg.overview == nil {
			delete(h.overviews, msg.group)
		} else {
			h.overviews[msg.group] = msg.overview
		}
		h.publish()
	case groupDeleted:
		delete(h.overviews, msg.group)
		delete(h.coordinators, msg.group) // requests from now on start it afresh
		delete(h.forwarded, msg.group)
		h.publish()
	case groupIdle:
		// A group asked about that holds nothing: its coordinator goes, so
		// that naming many group ids leaves nothing behind. Requests on
		// their way keep it.
		// (A second report of one that went already finds no PID, or another's.)
		if pid := h.coordinators[msg.group]; pid != nil && pid.Equal(msg.pid) && h.forwarded[msg.group] == msg.handled {
			delete(h.coordinators, msg.group)
			delete(h.forwarded, msg.group)
			ctx.Stop(pid)
		}
	case *actor.Terminated:
		for g, pid := range h.coordinators {
			if pid.Equal(msg.Who) {
				delete(h.coordinators, g)
				delete(h.forwarded, g)
			}
		}
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		group, ok := GroupOf(msg)
		if !ok {
			return
		}
		if !h.loaded {
			if resp := GroupError(msg, messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "the coordinator is loading its groups"); resp != nil {
				actors.Respond(ctx, resp)
			}
			return
		}
		ctx.Forward(h.coordinator(ctx, group))
		h.forwarded[group]++
	}
}

// load reads the next chunk of the partition, up to its log end.
func (h *groupHost) load(ctx actor.Context) {
	req := &messages.FetchRequest{Topic: actors.OffsetsTopic, Partition: h.cfg.Partition, Offset: h.next,
		MaxBytes: int32(h.cfg.Broker.MaxFetchBytes), CurrentLeaderEpoch: -1, Isolation: actors.IsolationLogEnd}
	reply.Ask(ctx, h.cfg.BrokerPID, req, 10*time.Second, func(res any, err error) {
		resp, ok := res.(*messages.FetchResponse)
		switch {
		case err != nil || !ok:
			h.retryLoad(ctx, fmt.Sprintf("%v %T", err, res))
		case resp.Error == messages.ErrorCode_OFFSET_OUT_OF_RANGE && h.next < resp.LogStartOffset:
			h.next = resp.LogStartOffset // retention removed the front: start at the log start
			h.load(ctx)
		case resp.Error != messages.ErrorCode_NONE:
			// The partition actor may not have taken the leadership yet.
			h.retryLoad(ctx, resp.Error.String())
		case len(resp.Batches) == 0:
			h.finishLoad(ctx)
		default:
			for _, batch := range resp.Batches {
				recs, next, err := decodeGroupRecords(batch, h.next, nil)
				if err != nil {
					h.cfg.Broker.Logger.Error("skipping an unreadable offsets batch", "partition", h.cfg.Partition, "offset", h.next, "error", err)
					h.retryLoad(ctx, err.Error())
					return
				}
				for _, r := range recs {
					h.apply(r)
				}
				h.next = next
			}
			h.load(ctx)
		}
	})
}

func (h *groupHost) retryLoad(ctx actor.Context, why string) {
	h.backoff = min(max(2*h.backoff, 50*time.Millisecond), time.Second)
	h.cfg.Broker.Logger.Debug("group load retrying", "partition", h.cfg.Partition, "reason", why)
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(h.backoff, func() { root.Send(self, loadStep{}) })
}

// apply folds one replayed record into the loaded state.
func (h *groupHost) apply(r groupRecord) {
	g := h.groups[r.Key.Group]
	if g == nil {
		g = &loadedGroup{offsets: map[cluster.TopicPartition]*messages.OffsetValue{}}
		h.groups[r.Key.Group] = g
	}
	if r.ConsumerGroup {
		g.consumer = r.Consumer // nil when deleted
		return
	}
	tp := cluster.TopicPartition{Topic: r.Key.Topic, Partition: r.Key.Partition}
	switch {
	case r.Legacy && !r.Deleted:
		if g.legacy == nil {
			g.legacy = map[cluster.TopicPartition]bool{}
		}
		g.legacy[tp] = true
	default:
		delete(g.legacy, tp)
	}
	if r.Key.Topic == "" {
		g.meta = r.Metadata // nil when deleted
		return
	}
	if r.Deleted {
		delete(g.offsets, tp)
	} else {
		g.offsets[tp] = r.Offset
	}
}

// finishLoad starts serving: groups with members get their coordinator at
// once, so that silent members are evicted and push members fed again.
func (h *groupHost) finishLoad(ctx actor.Context) {
	h.loaded = true
	h.cfg.Broker.Logger.Info("coordinating groups", "partition", fmt.Sprintf("%s-%d", actors.OffsetsTopic, h.cfg.Partition),
		"groups", len(h.groups), "records_to", h.next, "took", time.Since(h.started).Round(time.Millisecond))
	// Before any coordinator runs (whose writes must come after), so that
	// a rewritten value never lands after a newer one.
	h.migrateLegacy(ctx)
	h.scheduleRefresh(ctx)
	for name, g := range h.groups {
		if g.meta != nil && len(g.meta.Members) > 0 || g.consumer != nil && len(g.consumer.Members) > 0 {
			h.coordinator(ctx, name)
		}
	}
	h.publish()
}

// coordinator returns the coordinator actor of group, starting it from the
// loaded state when needed.
func (h *groupHost) coordinator(ctx actor.Context, group string) *actor.PID {
	if pid, ok := h.coordinators[group]; ok {
		return pid
	}
	g := h.groups[group]
	if g == nil {
		g = &loadedGroup{offsets: map[cluster.TopicPartition]*messages.OffsetValue{}}
	}
	props := actor.PropsFromProducer(newGroupCoordinator(coordinatorConfig{Group: group, Partition: h.cfg.Partition,
		Broker: h.cfg.Broker, BrokerPID: h.cfg.BrokerPID, Meta: h.cfg.Meta, Loaded: g}))
	pid := ctx.Spawn(props)
	ctx.Watch(pid)
	h.coordinators[group] = pid
	delete(h.groups, group) // the coordinator owns the state now
	return pid
}

func (h *groupHost) publish() {
	list := make([]*messages.GroupOverview, 0, len(h.overviews)+len(h.groups))
	for _, o := range h.overviews {
		list = append(list, o)
	}
	for name, g := range h.groups {
		if g.meta == nil && len(g.offsets) == 0 && g.consumer == nil {
			continue // deleted
		}
		if _, ok := h.overviews[name]; !ok {
			members, kind := int32(0), "classic"
			if g.meta != nil {
				members = int32(len(g.meta.Members))
			}
			if g.consumer != nil && members == 0 {
				members, kind = int32(len(g.consumer.Members)), "consumer"
			}
			state := "Empty"
			if members > 0 {
				state = "Stable"
			}
			list = append(list, &messages.GroupOverview{Group: name, State: state, Members: members, Coordinator: h.cfg.Broker.ID, GroupType: kind})
		}
	}
	h.cfg.Overview.Store(&list)
}

// migrateLegacy writes again, in Kafka's format, the current values of
// the loaded groups that were last written in the protobuf format of
// earlier releases, so that Kafka's tools see every group's offsets. It
// runs once per load, before any coordinator of the partition writes; a
// write that fails leaves the old records, which the next load reads and
// migrates again.
func (h *groupHost) migrateLegacy(ctx actor.Context) {
	var recs []groupRecord
	groups := 0
	for _, name := range slices.Sorted(maps.Keys(h.groups)) {
		g := h.groups[name]
		if len(g.legacy) == 0 {
			continue
		}
		groups++
		if g.meta != nil {
			recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: name}, Metadata: g.meta})
		}
		recs = append(recs, offsetRecords(name, g.offsets)...)
		g.legacy = nil
	}
	if len(recs) == 0 {
		return
	}
	h.cfg.Broker.Logger.Info("rewriting groups in Kafka's record format", "partition", h.cfg.Partition, "groups", groups, "records", len(recs))
	for _, chunk := range chunkRecords(recs) {
		h.produce(ctx, chunk, "rewriting groups in Kafka's record format (the next load tries again)")
	}
}
