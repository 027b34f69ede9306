package coordinator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/consumergroup"
	"github.com/sluicemq/sluice/actors/groups"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/metrics"
	"github.com/sluicemq/sluice/transport"
)

// coordinatorConfig is what a group coordinator starts with.
type coordinatorConfig struct {
	Group     string
	Partition int32
	Broker    *actors.BrokerConfig
	BrokerPID *actor.PID
	Meta      *atomic.Pointer[cluster.Snapshot]
	// Loaded is the group's state replayed from the offsets partition.
	Loaded *loadedGroup
}

type (
	coordinatorTick struct{}
	// pushMemberDown reports a push member's actor gone.
	pushMemberDown struct{ member string }
	// pushCommit is a pusher relaying its actor's PushAck; replyTo is the
	// ack's sender, if it asked for an answer.
	pushCommit struct {
		member  string
		ack     *messages.PushAck
		replyTo *actor.PID
	}
)

// pendingWrite is a batch of group records and what to do once it is
// durable in the offsets partition.
type pendingWrite struct {
	records []groupRecord
	done    func(err error)
}

// groupCoordinator is one consumer group's coordinator: a shell around
// groups.Group that persists the group's metadata and offsets to its
// __consumer_offsets partition (acks=all, so they survive a failover) and
// runs a pusher child per push member.
type groupCoordinator struct {
	cfg coordinatorConfig
	g   *groups.Group
	// cg is the group's membership while it is a group of Kafka's consumer
	// protocol (KIP-848; see consumer_group.go), made by its first heartbeat.
	cg *consumergroup.Group
	// cgWritten is cg.Changes() at the last write of the group.
	cgWritten uint64
	// listedState is the consumer group's state as last reported to the
	// host for ListGroups.
	listedState string
	// ids are the topic ids of the metadata snapshot of, both ways.
	ids struct {
		of           *cluster.Snapshot
		byID, byName map[string]string
	}
	offsets map[cluster.TopicPartition]*messages.OffsetValue

	// writes queue behind the one in flight: every write completes in order.
	queue    []pendingWrite
	inflight bool
	// refreshPending: the group's state is to be written again once no
	// write is pending (refresh.go); persistedMeta is the classic group's
	// metadata as last written, what a refresh writes again.
	refreshPending bool
	persistedMeta  *messages.GroupMetadataValue
	// activeAt is when the group last had members (or this coordinator
	// started): its offsets expire a retention after (refresh.go).
	activeAt time.Time

	pushers map[string]*actor.PID // member id -> pusher
	ticker  *time.Ticker
	stop    chan struct{}

	// charges are the bytes each member's join holds in the broker's
	// group metadata budget, and the principal they count for.
	charges map[string]charge
	// handled counts the requests the host forwarded (see idle).
	handled uint64
}

// charge is what one member holds in the group metadata budget.
type charge struct {
	principal string
	bytes     int64
}

func newGroupCoordinator(cfg coordinatorConfig) actor.Producer {
	return func() actor.Actor {
		return &groupCoordinator{cfg: cfg, offsets: map[cluster.TopicPartition]*messages.OffsetValue{},
			pushers: map[string]*actor.PID{}, charges: map[string]charge{}}
	}
}

// groupConfig is the groups.Group configuration of this broker, with member
// ids unique across coordinator incarnations.
func (c *groupCoordinator) groupConfig() groups.Config {
	gc := groups.DefaultConfig()
	gc.MinSessionTimeout = c.cfg.Broker.GroupMinSessionTimeout
	gc.MaxSessionTimeout = c.cfg.Broker.GroupMaxSessionTimeout
	gc.InitialRebalanceDelay = c.cfg.Broker.GroupInitialRebalanceDelay
	gc.MaxSize = c.cfg.Broker.GroupMaxSize
	var b [4]byte
	_, _ = rand.Read(b[:])
	incarnation := hex.EncodeToString(b[:])
	gc.NewMemberID = func(clientID string, seq uint64) string {
		return fmt.Sprintf("%s-%s-%d", clientID, incarnation, seq)
	}
	return gc
}

// partitionCounts reads topic sizes from the broker's latest metadata.
func (c *groupCoordinator) partitionCounts(topic string) int32 {
	snap := c.cfg.Meta.Load()
	if snap == nil {
		return 0
	}
	if t := snap.Topics[topic]; t != nil {
		return t.Partitions
	}
	return 0
}

func (c *groupCoordinator) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.onStarted(ctx)
	case *actor.Restarting:
		c.releaseCharges(false) // the state they counted is gone
		c.stopTicker()
		return
	case *actor.Stopping:
		c.releaseCharges(false)
		c.cfg.Broker.Metrics.DropGroup(c.cfg.Group)
		c.stopTicker()
		return
	case *actor.Stopped:
		return
	case coordinatorTick:
		c.handle(ctx, c.g.Tick(time.Now(), c.partitionCounts))
		c.onConsumerTick(ctx)
		if c.idle() { // ids handed out to join with expired unused
			ctx.Send(ctx.Parent(), groupIdle{group: c.cfg.Group, pid: ctx.Self(), handled: c.handled})
		}
	case refreshState:
		c.onRefreshState(ctx)
	case pushCommit:
		c.onPushAck(ctx, msg.member, msg.ack, msg.replyTo)
	case pushMemberDown:
		c.cfg.Broker.Logger.Info("push member's actor is gone; removing it", "group", c.cfg.Group, "member", msg.member)
		c.handle(ctx, c.g.Leave(msg.member, time.Now(), c.partitionCounts))
	default:
		if r, ok := groupRequests[reflect.TypeOf(msg)]; ok {
			c.handled++
			r.serve(c, ctx, msg.(proto.Message))
			if c.idle() {
				ctx.Send(ctx.Parent(), groupIdle{group: c.cfg.Group, pid: ctx.Self(), handled: c.handled})
			}
		}
	}
	if c.g.Busy() || (c.cg != nil && c.cg.Len() > 0) {
		c.activeAt = time.Now()
	}
	c.tickIfNeeded(ctx)
}

// idle reports whether the group holds nothing a request could find: no
// members of either protocol nor any about to join, no committed offsets,
// no generation or epoch ever, nothing being written. Its coordinator is
// then the same as none, and the host stops it.
func (c *groupCoordinator) idle() bool {
	return c.g.Idle() && (c.cg == nil || c.cg.Epoch() == 0) && len(c.offsets) == 0 &&
		!c.inflight && len(c.queue) == 0 && len(c.pushers) == 0
}

func (c *groupCoordinator) onSync(ctx actor.Context, msg *messages.SyncGroupRequest) {
	if _, code := c.g.Instance(msg.MemberId, msg.InstanceId); code != groups.None {
		actors.Respond(ctx, &messages.SyncGroupResponse{Error: groupCode(code), ErrorMessage: codeText(code, msg.MemberId)})
		return
	}
	if c.g.ProtocolType() != "" || len(msg.Assignments) > 0 {
		c.handle(ctx, c.g.SyncRelay(msg.MemberId, msg.Generation, fromMemberBytes(msg.Assignments), ctx.Sender(), time.Now()))
		return
	}
	assignment, code := c.g.Sync(msg.MemberId, msg.Generation, time.Now())
	actors.Respond(ctx, &messages.SyncGroupResponse{Error: groupCode(code), ErrorMessage: codeText(code, msg.MemberId), Assignment: toWireAssignment(assignment)})
}

func (c *groupCoordinator) onHeartbeat(ctx actor.Context, msg *messages.HeartbeatRequest) {
	_, code := c.g.Instance(msg.MemberId, msg.InstanceId)
	if code == groups.None {
		code = c.g.Heartbeat(msg.MemberId, msg.Generation, time.Now())
	}
	actors.Respond(ctx, &messages.HeartbeatResponse{Error: groupCode(code), ErrorMessage: codeText(code, msg.MemberId)})
}

func (c *groupCoordinator) onLeaveGroup(ctx actor.Context, msg *messages.LeaveGroupRequest) {
	member, code := c.g.Instance(msg.MemberId, msg.InstanceId)
	if code != groups.None {
		actors.Respond(ctx, &messages.LeaveGroupResponse{Error: groupCode(code), ErrorMessage: codeText(code, msg.MemberId)})
		return
	}
	c.onLeave(ctx, member, func(code messages.ErrorCode, text string) {
		actors.Respond(ctx, &messages.LeaveGroupResponse{Error: code, ErrorMessage: text})
	})
}

func (c *groupCoordinator) onUnsubscribe(ctx actor.Context, msg *messages.UnsubscribeRequest) {
	c.onLeave(ctx, msg.MemberId, func(code messages.ErrorCode, text string) {
		actors.Respond(ctx, &messages.LeaveGroupResponse{Error: code, ErrorMessage: text})
	})
}

// onPushCredit passes a member's credit on to its pusher.
func (c *groupCoordinator) onPushCredit(ctx actor.Context, msg *messages.PushCredit) {
	if pid, ok := c.pushers[msg.MemberId]; ok {
		ctx.Forward(pid)
	}
}

func (c *groupCoordinator) onStarted(ctx actor.Context) {
	now := time.Now()
	c.activeAt = now
	loaded := c.cfg.Loaded
	if loaded != nil && loaded.meta != nil {
		c.g = groups.Restore(c.groupConfig(), fromWireSnapshot(loaded.meta), now, c.partitionCounts)
		c.persistedMeta = loaded.meta
	} else {
		c.g = groups.New(c.groupConfig())
	}
	if loaded != nil {
		c.offsets = loaded.offsets
		if loaded.consumer != nil {
			c.cg = consumergroup.Restore(c.consumerGroupConfig(), fromWireConsumerGroup(loaded.consumer), now, c.catalog())
			c.cgWritten = c.cg.Changes()
		}
	}
	// Push members survive a coordinator failover: feed them again.
	for _, id := range c.g.MemberIDs() {
		if m, ok := c.g.Member(id); ok && !m.Push.IsZero() {
			c.startPusher(ctx, m)
		}
	}
	c.reportOverview(ctx)
}

// tickIfNeeded runs the coordinator's timer only while its group has
// something with a deadline (members of either protocol, ids handed out
// to join with, a rebalance, answers owed): the groups a cluster has seen
// and nobody is in keep their state without a goroutine and a tick every
// tickEvery each.
func (c *groupCoordinator) tickIfNeeded(ctx actor.Context) {
	need := c.g.Busy() || (c.cg != nil && c.cg.Len() > 0)
	switch {
	case need && c.ticker == nil:
		c.ticker = time.NewTicker(tickEvery)
		c.stop = make(chan struct{})
		self, root, ticker, stop := ctx.Self(), ctx.ActorSystem().Root, c.ticker, c.stop
		go func() {
			for {
				select {
				case <-ticker.C:
					root.Send(self, coordinatorTick{})
				case <-stop:
					return
				}
			}
		}()
	case !need:
		c.stopTicker()
	}
}

func (c *groupCoordinator) stopTicker() {
	if c.ticker != nil {
		c.ticker.Stop()
		close(c.stop)
		c.ticker, c.stop = nil, nil
	}
}

// handle carries out an Outcome: persist the metadata, then answer the
// parked joins, then update the push members.
func (c *groupCoordinator) handle(ctx actor.Context, out groups.Outcome) {
	c.releaseCharges(true) // of members gone: left, evicted, replaced
	if len(out.Replies) == 0 && len(out.SyncReplies) == 0 && !out.Persist && len(out.Changed) == 0 && len(out.Removed) == 0 && !out.Rebalanced {
		return
	}
	replies, syncs := out.Replies, out.SyncReplies
	protocolType := c.g.ProtocolType()
	send := func(err error) {
		for _, r := range replies {
			pid, _ := r.ReplyTo.(*actor.PID)
			if pid == nil {
				continue // a push member's join: its pusher is told below
			}
			resp := &messages.JoinGroupResponse{Error: groupCode(r.Code), ErrorMessage: codeText(r.Code, r.MemberID),
				Generation: r.Generation, MemberId: r.MemberID, LeaderId: r.LeaderID, Assignor: r.Assignor, Members: r.Members,
				MemberMetadata: toMemberBytes(r.MemberMetadata)}
			if r.Protocol != "" {
				resp.ProtocolType = protocolType
			}
			if err != nil && r.Code == groups.None {
				resp.Error, resp.ErrorMessage = messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "group metadata not persisted: "+err.Error()
			}
			ctx.Send(pid, resp)
		}
		for _, r := range syncs {
			pid, _ := r.ReplyTo.(*actor.PID)
			if pid == nil {
				continue
			}
			resp := &messages.SyncGroupResponse{Error: groupCode(r.Code), ErrorMessage: codeText(r.Code, r.MemberID),
				RelayAssignment: r.Assignment, ProtocolType: protocolType, Protocol: c.g.Describe().Assignor}
			if err != nil && r.Code == groups.None {
				resp.Error, resp.ErrorMessage = messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "group assignments not persisted: "+err.Error()
			}
			ctx.Send(pid, resp)
		}
	}
	if out.Persist {
		snap := toWireSnapshot(c.g.Snapshot())
		c.write(ctx, []groupRecord{{Key: &messages.GroupRecordKey{Group: c.cfg.Group}, Metadata: snap}}, func(err error) {
			if err == nil {
				c.persistedMeta = snap
			}
			send(err)
		})
	} else {
		send(nil)
	}
	for _, id := range out.Removed {
		if pid, ok := c.pushers[id]; ok {
			ctx.Stop(pid)
			delete(c.pushers, id)
		}
	}
	if out.Rebalanced || len(out.Changed) > 0 {
		for _, id := range c.g.MemberIDs() {
			m, ok := c.g.Member(id)
			if !ok || m.Push.IsZero() {
				continue
			}
			if _, running := c.pushers[id]; !running {
				c.startPusher(ctx, m)
			} else {
				ctx.Send(c.pushers[id], c.pusherAssignment(m))
			}
		}
	}
	c.reportOverview(ctx)
}

func (c *groupCoordinator) onJoin(ctx actor.Context, req *messages.JoinGroupRequest) {
	jr := groups.JoinRequest{MemberID: req.MemberId, ClientID: req.ClientId, Topics: req.Topics,
		Assignors: req.Assignors, SessionTimeout: time.Duration(req.SessionTimeoutMs) * time.Millisecond,
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMs) * time.Millisecond, ReplyTo: ctx.Sender(),
		ProtocolType: req.ProtocolType, RequireMemberID: req.RequireMemberId, InstanceID: req.InstanceId}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, groups.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	if c.consumerMembers() {
		actors.Respond(ctx, &messages.JoinGroupResponse{Error: messages.ErrorCode_INCONSISTENT_GROUP_PROTOCOL, MemberId: req.MemberId,
			ErrorMessage: fmt.Sprintf("group %q is a consumer group (KIP-848) with members; its members use ConsumerGroupHeartbeat", c.cfg.Group)})
		return
	}
	// What the join carries counts in the broker's group metadata budget,
	// in place of what the member's last join carried.
	principal, size := transport.Principal(ctx), int64(jr.Bytes())+memberOverheadBytes
	undo, ok := c.recharge(req.MemberId, principal, size, true)
	if !ok {
		c.cfg.Broker.Logger.Warn("refused a group join over the group metadata budget", "group", c.cfg.Group, "principal", principal, "bytes", size)
		actors.Respond(ctx, &messages.JoinGroupResponse{Error: messages.ErrorCode_GROUP_MAX_SIZE_REACHED, ErrorMessage: c.overBudget(principal, size), MemberId: req.MemberId})
		return
	}
	out := c.g.Join(jr, time.Now(), c.partitionCounts)
	switch {
	case out.Code != groups.None:
		undo()
	case out.MemberID != req.MemberId: // a new member's id
		c.charges[out.MemberID] = c.charges[req.MemberId]
		delete(c.charges, req.MemberId)
	}
	if out.Code != groups.None {
		actors.Respond(ctx, &messages.JoinGroupResponse{Error: groupCode(out.Code), ErrorMessage: codeText(out.Code, req.MemberId), MemberId: out.MemberID})
	}
	c.handle(ctx, out)
}

func (c *groupCoordinator) onLeave(ctx actor.Context, member string, answer func(messages.ErrorCode, string)) {
	out := c.g.Leave(member, time.Now(), c.partitionCounts)
	answer(groupCode(out.Code), codeText(out.Code, member))
	c.handle(ctx, out)
}

func (c *groupCoordinator) onSubscribe(ctx actor.Context, req *messages.SubscribeRequest) {
	if req.TargetAddress == "" || req.TargetId == "" || len(req.Topics) == 0 {
		actors.Respond(ctx, &messages.SubscribeResponse{Error: messages.ErrorCode_INVALID_REQUEST, ErrorMessage: "a subscription needs a target actor and topics"})
		return
	}
	reset := req.AutoOffsetReset
	if reset == "" {
		reset = "earliest"
	}
	if reset != "earliest" && reset != "latest" {
		// "none" too: a push member has no poll loop to report a partition
		// without a commit to, so it would sit there unconsumed.
		actors.Respond(ctx, &messages.SubscribeResponse{Error: messages.ErrorCode_INVALID_CONFIG,
			ErrorMessage: fmt.Sprintf("auto offset reset %q: a push subscriber takes earliest or latest", reset)})
		return
	}
	if req.InitialCredit < 0 {
		actors.Respond(ctx, &messages.SubscribeResponse{Error: messages.ErrorCode_INVALID_REQUEST,
			ErrorMessage: fmt.Sprintf("initial credit %d: must be >= 0 (0: the default, %d)", req.InitialCredit, DefaultPushCredit)})
		return
	}
	if c.consumerMembers() {
		actors.Respond(ctx, &messages.SubscribeResponse{Error: messages.ErrorCode_INCONSISTENT_GROUP_PROTOCOL,
			ErrorMessage: fmt.Sprintf("group %q is a consumer group (KIP-848) of Kafka clients", c.cfg.Group)})
		return
	}
	rebalance := c.cfg.Broker.GroupInitialRebalanceDelay + 10*time.Second
	jr := groups.JoinRequest{ClientID: "push-" + req.ClientId, Topics: req.Topics, Assignors: req.Assignors,
		SessionTimeout: c.cfg.Broker.GroupMaxSessionTimeout, RebalanceTimeout: rebalance,
		Push:            groups.PushTarget{Address: req.TargetAddress, ID: req.TargetId, Credit: req.InitialCredit, Principal: transport.Principal(ctx)},
		AutoOffsetReset: reset}
	// A push member counts in the group metadata budget as any member.
	principal, size := transport.Principal(ctx), int64(jr.Bytes())+memberOverheadBytes
	undo, ok := c.recharge("", principal, size, true)
	if !ok {
		actors.Respond(ctx, &messages.SubscribeResponse{Error: messages.ErrorCode_GROUP_MAX_SIZE_REACHED, ErrorMessage: c.overBudget(principal, size)})
		return
	}
	out := c.g.Join(jr, time.Now(), c.partitionCounts)
	if out.Code != groups.None {
		undo()
	} else {
		c.charges[out.MemberID] = c.charges[""]
		delete(c.charges, "")
	}
	actors.Respond(ctx, &messages.SubscribeResponse{Error: groupCode(out.Code), ErrorMessage: codeText(out.Code, ""), MemberId: out.MemberID})
	c.handle(ctx, out)
}

// onCommit writes offsets for a member of the current generation (or an
// admin commit to an empty group), then answers.
func (c *groupCoordinator) onCommit(ctx actor.Context, req *messages.OffsetCommitRequest) {
	sender := ctx.Sender()
	answer := func(code messages.ErrorCode, text string) {
		actors.SendTo(ctx, sender, &messages.OffsetCommitResponse{Error: code, ErrorMessage: text})
	}
	if c.consumerMembers() {
		var parts []groups.TopicPartitions
		for _, o := range req.Offsets {
			parts = append(parts, groups.TopicPartitions{Topic: o.Topic, Partitions: []int32{o.Partition}})
		}
		if code, text := c.cg.CommitCheck(req.MemberId, req.Generation, parts); code != consumergroup.None {
			answer(consumerCode(code), "commit: "+text)
			return
		}
	} else {
		_, code := c.g.Instance(req.MemberId, req.InstanceId)
		if code == groups.None {
			code = c.g.CommitCheck(req.MemberId, req.Generation)
		}
		if code != groups.None {
			answer(groupCode(code), fmt.Sprintf("commit from member %q at generation %d: %s (group generation %d)",
				req.MemberId, req.Generation, code, c.g.Generation()))
			return
		}
	}
	var recs []groupRecord
	for _, o := range req.Offsets {
		if o.Offset < 0 {
			answer(messages.ErrorCode_INVALID_OFFSET, fmt.Sprintf("%s-%d: offset %d", o.Topic, o.Partition, o.Offset))
			return
		}
		if len(o.Metadata) > actors.OffsetMetadataMaxBytes {
			answer(messages.ErrorCode_OFFSET_METADATA_TOO_LARGE, fmt.Sprintf("%s-%d: %d bytes of metadata, at most %d",
				o.Topic, o.Partition, len(o.Metadata), actors.OffsetMetadataMaxBytes))
			return
		}
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group, Topic: o.Topic, Partition: o.Partition},
			Offset: &messages.OffsetValue{Offset: o.Offset, Metadata: o.Metadata, CommitUnixMs: time.Now().UnixMilli()}})
	}
	if len(recs) == 0 {
		answer(messages.ErrorCode_NONE, "")
		return
	}
	c.write(ctx, recs, func(err error) {
		if err != nil {
			answer(messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "offsets not persisted: "+err.Error())
			return
		}
		answer(messages.ErrorCode_NONE, "")
	})
}

// onPushAck commits what a push member has processed, if the member has
// owned the partition since the generation of the records acknowledged;
// replyTo (if any) is answered like an OffsetCommit.
func (c *groupCoordinator) onPushAck(ctx actor.Context, member string, ack *messages.PushAck, replyTo *actor.PID) {
	answer := func(code messages.ErrorCode, text string) {
		actors.SendTo(ctx, replyTo, &messages.OffsetCommitResponse{Error: code, ErrorMessage: text})
	}
	if code := c.g.AckCheck(member, ack.Generation, ack.Topic, ack.Partition); code != groups.None {
		text := fmt.Sprintf("push ack of %s-%d from member %q at generation %d: %s (group generation %d)",
			ack.Topic, ack.Partition, member, ack.Generation, code, c.g.Generation())
		c.cfg.Broker.Logger.Debug("push ack refused", "group", c.cfg.Group, "reason", text)
		answer(groupCode(code), text)
		return
	}
	if ack.NextOffset < 0 {
		answer(messages.ErrorCode_INVALID_OFFSET, fmt.Sprintf("%s-%d: offset %d", ack.Topic, ack.Partition, ack.NextOffset))
		return
	}
	rec := groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group, Topic: ack.Topic, Partition: ack.Partition},
		Offset: &messages.OffsetValue{Offset: ack.NextOffset, CommitUnixMs: time.Now().UnixMilli()}}
	c.write(ctx, []groupRecord{rec}, func(err error) {
		if err != nil {
			answer(messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "offsets not persisted: "+err.Error())
			return
		}
		answer(messages.ErrorCode_NONE, "")
	})
}

func (c *groupCoordinator) onOffsetFetch(req *messages.OffsetFetchRequest) *messages.OffsetFetchResponse {
	resp := &messages.OffsetFetchResponse{}
	// A fetch naming a member is checked in a consumer group, with members
	// or left empty by them (epoch > 0), as Kafka; classic groups and
	// groups never seen are not.
	if req.MemberSet && c.cg != nil && c.cg.Epoch() > 0 && c.g.Len() == 0 {
		if code, text := c.cg.FetchCheck(req.MemberId, req.MemberEpoch); code != consumergroup.None {
			resp.Error, resp.ErrorMessage = consumerCode(code), "offset fetch: "+text
			return resp
		}
	}
	add := func(tp cluster.TopicPartition) {
		o := c.offsets[tp]
		entry := &messages.OffsetCommitEntry{Topic: tp.Topic, Partition: tp.Partition, Offset: -1}
		if o != nil {
			entry.Offset, entry.Metadata = o.Offset, o.Metadata
		}
		resp.Offsets = append(resp.Offsets, entry)
	}
	if len(req.Partitions) == 0 {
		keys := make([]cluster.TopicPartition, 0, len(c.offsets))
		for tp := range c.offsets {
			keys = append(keys, tp)
		}
		slices.SortFunc(keys, compareTP)
		for _, tp := range keys {
			add(tp)
		}
		return resp
	}
	for _, tps := range req.Partitions {
		for _, p := range tps.Partitions {
			add(cluster.TopicPartition{Topic: tps.Topic, Partition: p})
		}
	}
	return resp
}

func compareTP(a, b cluster.TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition - b.Partition)
}

// memberOverheadBytes is what a member costs in the group metadata budget
// besides what it subscribes with (its record, its assignment, the
// coordinator's maps), so that one-letter subscriptions in group after
// group do not make members free.
const memberOverheadBytes = 1 << 10

// recharge makes member's charge in the group metadata budget size bytes
// for principal, in place of what it held; undo puts the old charge back.
// Without replace the member's charge stays as it was.
func (c *groupCoordinator) recharge(member, principal string, size int64, replace bool) (undo func(), ok bool) {
	if !replace {
		return func() {}, true
	}
	budget := c.cfg.Broker.GroupMetadata
	old, had := c.charges[member]
	if had {
		budget.Release(old.principal, old.bytes)
	}
	if !budget.TryTake(principal, size) {
		if had {
			budget.Take(old.principal, old.bytes)
		}
		return nil, false
	}
	c.charges[member] = charge{principal, size}
	return func() {
		budget.Release(principal, size)
		delete(c.charges, member)
		if had {
			budget.Take(old.principal, old.bytes)
			c.charges[member] = old
		}
	}, true
}

// overBudget explains a refusal by the group metadata budget.
func (c *groupCoordinator) overBudget(principal string, size int64) string {
	budget := c.cfg.Broker.GroupMetadata
	return fmt.Sprintf("the broker holds %d bytes of group members' metadata for %q and %d in all, its limits (--group-metadata-max-bytes %d); this member needs %d",
		budget.Held(principal), principal, budget.Used(), budget.Limit(), size)
}

// hasMember reports whether id is a member of the group, of either protocol.
func (c *groupCoordinator) hasMember(id string) bool {
	return c.g.Has(id) || (c.cg != nil && c.cg.Has(id))
}

// memberCount is the group's members, of either protocol.
func (c *groupCoordinator) memberCount() int {
	n := c.g.Len()
	if c.cg != nil {
		n += c.cg.Len()
	}
	return n
}

// releaseCharges gives back the group metadata budget of members no
// longer in the group (onlyGone), or of all.
func (c *groupCoordinator) releaseCharges(onlyGone bool) {
	for id, ch := range c.charges {
		if onlyGone && c.hasMember(id) {
			continue
		}
		c.cfg.Broker.GroupMetadata.Release(ch.principal, ch.bytes)
		delete(c.charges, id)
	}
}

// onDelete deletes a group without members: tombstones for its metadata
// and every committed offset, then this coordinator stops and the host
// forgets the group.
func (c *groupCoordinator) onDelete(ctx actor.Context) {
	sender := ctx.Sender()
	answer := func(code messages.ErrorCode, text string) {
		actors.SendTo(ctx, sender, &messages.DeleteGroupResponse{Error: code, ErrorMessage: text})
	}
	if n := c.memberCount(); n > 0 {
		answer(messages.ErrorCode_NON_EMPTY_GROUP, fmt.Sprintf("group %q has %d members", c.cfg.Group, n))
		return
	}
	if c.g.Generation() == 0 && len(c.offsets) == 0 && c.cg == nil {
		answer(messages.ErrorCode_GROUP_ID_NOT_FOUND, fmt.Sprintf("group %q does not exist", c.cfg.Group))
		return
	}
	recs := []groupRecord{{Key: &messages.GroupRecordKey{Group: c.cfg.Group}, Deleted: true}}
	if c.cg != nil {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group}, ConsumerGroup: true, Deleted: true})
	}
	for tp := range c.offsets {
		recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group, Topic: tp.Topic, Partition: tp.Partition}, Deleted: true})
	}
	c.write(ctx, recs, func(err error) {
		if err != nil {
			answer(messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "deletion not persisted: "+err.Error())
			return
		}
		c.cfg.Broker.Logger.Info("deleted group", "group", c.cfg.Group, "offsets", len(recs)-1)
		answer(messages.ErrorCode_NONE, "")
		ctx.Send(ctx.Parent(), groupDeleted{group: c.cfg.Group})
		ctx.Stop(ctx.Self())
	})
}

// onDeleteOffsets deletes committed offsets, as Kafka's OffsetDelete: all
// those asked while the group is empty; while it has members, only those
// of topics no member consumes (GROUP_SUBSCRIBED_TO_TOPIC for the others),
// never those of a partition the cluster does not have
// (UNKNOWN_TOPIC_OR_PARTITION), and none at all (NON_EMPTY_GROUP) when the members' protocol is one
// whose subscriptions the coordinator cannot read.
func (c *groupCoordinator) onDeleteOffsets(ctx actor.Context, req *messages.DeleteOffsetsRequest) {
	sender := ctx.Sender()
	resp := &messages.DeleteOffsetsResponse{}
	answer := func() { actors.SendTo(ctx, sender, resp) }
	members := c.memberCount()
	pt := c.g.ProtocolType()
	switch {
	case c.g.Generation() == 0 && members == 0 && len(c.offsets) == 0 && c.cg == nil:
		resp.Error, resp.ErrorMessage = messages.ErrorCode_GROUP_ID_NOT_FOUND, fmt.Sprintf("group %q does not exist", c.cfg.Group)
		answer()
		return
	case members > 0 && pt != "" && pt != consumerProtocol:
		resp.Error, resp.ErrorMessage = messages.ErrorCode_NON_EMPTY_GROUP,
			fmt.Sprintf("group %q has %d members of protocol type %q", c.cfg.Group, members, pt)
		answer()
		return
	}
	subscribed := c.subscribedTopics()
	var recs []groupRecord
	for _, tps := range req.Partitions {
		for _, p := range tps.Partitions {
			code := messages.ErrorCode_NONE
			tp := cluster.TopicPartition{Topic: tps.Topic, Partition: p}
			switch {
			case p < 0 || p >= c.partitionCounts(tps.Topic):
				code = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION
			case slices.Contains(subscribed, tps.Topic):
				code = messages.ErrorCode_GROUP_SUBSCRIBED_TO_TOPIC
			case c.offsets[tp] != nil:
				recs = append(recs, groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group, Topic: tp.Topic, Partition: tp.Partition}, Deleted: true})
			}
			resp.Partitions = append(resp.Partitions, &messages.PartitionError{Topic: tp.Topic, Partition: p, Error: code})
		}
	}
	if len(recs) == 0 {
		answer()
		return
	}
	c.write(ctx, recs, func(err error) {
		if err != nil {
			resp = &messages.DeleteOffsetsResponse{Error: messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, ErrorMessage: "deletion not persisted: " + err.Error()}
		}
		answer()
	})
}

// subscribedTopics lists the topics the group's members consume, sorted.
func (c *groupCoordinator) subscribedTopics() []string {
	var topics []string
	for _, m := range c.describe().Members {
		topics = append(topics, m.Topics...)
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}

func (c *groupCoordinator) describe() *messages.DescribeGroupResponse {
	if c.cg != nil && c.g.Len() == 0 {
		return c.describeConsumers()
	}
	d := c.g.Describe()
	resp := &messages.DescribeGroupResponse{Group: c.cfg.Group, State: d.State.String(), Generation: d.Generation,
		Assignor: d.Assignor, LeaderId: d.Leader, Coordinator: c.cfg.Broker.ID, ProtocolType: c.g.ProtocolType(), GroupType: "classic"}
	if c.g.Generation() == 0 && len(d.Members) == 0 && len(c.offsets) == 0 {
		resp.State = "Dead" // Kafka's name for a group that does not exist
	}
	for _, m := range d.Members {
		md := &messages.MemberDescription{MemberId: m.MemberID, ClientId: m.ClientID,
			Topics: m.Topics, Assignment: toWireAssignment(m.Assignment), PushAddress: m.Push.Address, PushId: m.Push.ID,
			RelayAssignment: m.RelayAssignment, InstanceId: m.InstanceID}
		for _, p := range m.Protocols {
			if p.Name == d.Assignor {
				md.ProtocolMetadata = p.Metadata
			}
		}
		if m.ProtocolType == consumerProtocol {
			// Kafka consumers' subscription and assignment, decoded so that
			// sluice group describe shows them and their lag.
			md.Topics, md.Assignment = decodeConsumerProtocol(md.ProtocolMetadata, md.RelayAssignment)
		}
		resp.Members = append(resp.Members, md)
	}
	return resp
}

// consumerProtocol is the protocol type of Kafka's consumers.
const consumerProtocol = "consumer"

// decodeConsumerProtocol reads Kafka's consumer protocol: the topics of a
// member's subscription metadata and the partitions of its assignment.
// What does not decode is left out.
func decodeConsumerProtocol(metadata, assignment []byte) ([]string, []*messages.TopicPartitions) {
	var topics []string
	var meta kmsg.ConsumerMemberMetadata
	if meta.ReadFrom(metadata) == nil {
		topics = meta.Topics
	}
	var parts []*messages.TopicPartitions
	var a kmsg.ConsumerMemberAssignment
	if len(assignment) > 0 && a.ReadFrom(assignment) == nil {
		for _, t := range a.Topics {
			parts = append(parts, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	return topics, parts
}

// reportOverview tells the host how the group looks now, for ListGroups;
// a group that never had a member nor a commit (one only asked about) is
// not listed, as in Kafka.
func (c *groupCoordinator) reportOverview(ctx actor.Context) {
	overview := &messages.GroupOverview{Group: c.cfg.Group, State: c.g.State().String(),
		Members: int32(c.memberCount()), Coordinator: c.cfg.Broker.ID, GroupType: "classic"}
	if c.cg != nil && c.g.Len() == 0 {
		overview.State, overview.GroupType = c.cg.State(), "consumer"
		c.listedState = overview.State
	}
	if c.g.Generation() == 0 && overview.Members == 0 && len(c.offsets) == 0 && c.cg == nil {
		overview = nil
	}
	ctx.Send(ctx.Parent(), groupOverviewChanged{group: c.cfg.Group, overview: overview})
	c.publishMetrics()
}

// publishMetrics hands the metrics the group's members and commits.
func (c *groupCoordinator) publishMetrics() {
	if c.cfg.Broker.Metrics == nil {
		return
	}
	v := metrics.GroupView{Members: c.memberCount(), Committed: make(map[cluster.TopicPartition]int64, len(c.offsets))}
	for tp, o := range c.offsets {
		v.Committed[tp] = o.Offset
	}
	c.cfg.Broker.Metrics.PublishGroup(c.cfg.Group, v)
}

// ---- writes to the offsets partition ------------------------------------------

// write appends records to the group's offsets partition with acks=all;
// done runs once they are replicated (or failed). Writes queued while one
// is in flight go out together in the next batch.
func (c *groupCoordinator) write(ctx actor.Context, recs []groupRecord, done func(error)) {
	c.queue = append(c.queue, pendingWrite{records: recs, done: done})
	c.flushWrites(ctx)
}

func (c *groupCoordinator) flushWrites(ctx actor.Context) {
	c.startRefresh(ctx)
	if c.inflight || len(c.queue) == 0 {
		return
	}
	batch := c.takeWrites()
	var recs []groupRecord
	for _, w := range batch {
		recs = append(recs, w.records...)
	}
	// Offsets committed take effect in memory once durable; metadata lives
	// in groups.Group already.
	req := &messages.ProduceRequest{Topic: actors.OffsetsTopic, Partition: c.cfg.Partition, Acks: -1,
		TimeoutMs: 10000, Records: encodeGroupRecords(recs)}
	c.inflight = true
	reply.Ask(ctx, c.cfg.BrokerPID, req, 15*time.Second, func(res any, err error) {
		c.inflight = false
		if err == nil {
			err = produceError(res)
		}
		if err != nil {
			c.cfg.Broker.Logger.Warn("group write failed", "group", c.cfg.Group, "error", err)
		} else {
			listed := len(c.offsets) > 0
			for _, r := range recs {
				tp := cluster.TopicPartition{Topic: r.Key.Topic, Partition: r.Key.Partition}
				switch {
				case r.Key.Topic == "":
				case r.Deleted:
					delete(c.offsets, tp)
				default:
					c.offsets[tp] = r.Offset
				}
			}
			if !listed && len(c.offsets) > 0 {
				c.reportOverview(ctx) // a first commit: the group exists now
			} else {
				c.publishMetrics()
			}
		}
		for _, w := range batch {
			w.done(err)
		}
		c.flushWrites(ctx)
	})
}
