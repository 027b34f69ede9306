package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/groups"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/transport"
)

// DefaultPushCredit is the credit a push member starts with when its
// subscription did not say.
const DefaultPushCredit = 100

// pusherConfig is what a pusher starts with.
type pusherConfig struct {
	Group, Member string
	Target        *actor.PID
	Credit        int
	Broker        *actors.BrokerConfig
	BrokerPID     *actor.PID
	// Principal subscribed the member.
	Principal string
}

// pusherAssign gives a pusher its member's partitions for a generation,
// with the group's committed offsets and the reset policy.
type pusherAssign struct {
	generation int32
	partitions []cluster.TopicPartition
	committed  map[cluster.TopicPartition]int64
	reset      string
}

type pusherRetry struct{}

// pushCursor is the pusher's position in one assigned partition.
type pushCursor struct {
	offset   int64 // next offset to fetch; -1 until resolved
	inflight bool
	buffered []*messages.PushedRecord
}

// pusher feeds one push member: it fetches the member's partitions from
// their leaders like a consumer and pushes records to the member's actor,
// never more than the credit the actor has granted and not yet used. The
// actor answers PushRecords with PushCredit (more credit) and PushAck
// (commit); a pusher watches it and reports its death to the coordinator.
type pusher struct {
	cfg        pusherConfig
	generation int32
	credit     int
	cursors    map[cluster.TopicPartition]*pushCursor
	order      []cluster.TopicPartition // round-robin order of delivery
	next       int
	brokers    map[int32]string
	leaders    map[cluster.TopicPartition]int32
	refreshing bool
	retrying   bool
}

func newPusher(cfg pusherConfig) actor.Producer {
	return func() actor.Actor {
		return &pusher{cfg: cfg, credit: cfg.Credit, cursors: map[cluster.TopicPartition]*pushCursor{}}
	}
}

func (c *groupCoordinator) startPusher(ctx actor.Context, m groups.MemberRecord) {
	target := actor.NewPID(m.Push.Address, m.Push.ID)
	props := actor.PropsFromProducer(newPusher(pusherConfig{Group: c.cfg.Group, Member: m.MemberID, Target: target,
		Credit: pushCredit(m.Push), Broker: c.cfg.Broker, BrokerPID: c.cfg.BrokerPID, Principal: m.Push.Principal}))
	pid := ctx.Spawn(props)
	c.pushers[m.MemberID] = pid
	ctx.Send(pid, c.pusherAssignment(m))
}

// pushCredit is the credit a push member's pusher starts with: the one it
// subscribed with, which the member record keeps across a failover.
func pushCredit(t groups.PushTarget) int {
	if t.Credit > 0 {
		return int(t.Credit)
	}
	return DefaultPushCredit
}

func (c *groupCoordinator) pusherAssignment(m groups.MemberRecord) *pusherAssign {
	a := &pusherAssign{generation: c.g.Generation(), committed: map[cluster.TopicPartition]int64{}, reset: m.AutoOffsetReset}
	for _, tps := range m.Assignment {
		for _, p := range tps.Partitions {
			tp := cluster.TopicPartition{Topic: tps.Topic, Partition: p}
			a.partitions = append(a.partitions, tp)
			if o := c.offsets[tp]; o != nil {
				a.committed[tp] = o.Offset
			}
		}
	}
	return a
}

func (p *pusher) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		transport.WatchRemote(ctx, p.cfg.Target)
	case *actor.Stopping:
		transport.UnwatchRemote(ctx, p.cfg.Target)
	case *actor.Terminated:
		if msg.Who.Equal(p.cfg.Target) {
			ctx.Send(ctx.Parent(), pushMemberDown{member: p.cfg.Member})
		}
	case *pusherAssign:
		p.onAssign(ctx, msg)
	case *messages.PushCredit:
		if !p.fromMember(ctx) {
			return
		}
		if msg.Credit > 0 {
			p.credit += int(msg.Credit)
		}
		p.pump(ctx)
	case *messages.PushAck:
		if !p.fromMember(ctx) {
			return
		}
		ctx.Send(ctx.Parent(), pushCommit{member: p.cfg.Member, ack: msg, replyTo: ctx.Sender()})
	case pusherRetry:
		p.retrying = false
		p.pump(ctx)
	}
}

// fromMember admits credit and acks from this process, from a broker, or
// from the principal that subscribed the member: anybody else who learnt
// the pusher's id must not steer its flow control or commit its offsets.
func (p *pusher) fromMember(ctx actor.Context) bool {
	who := transport.Principal(ctx)
	if !p.cfg.Broker.Secure || who == "" || who == p.cfg.Principal || transport.IsBrokerPrincipal(who) {
		return true
	}
	p.cfg.Broker.Logger.Warn("push subscriber ignored a message from another principal", "group", p.cfg.Group,
		"member", p.cfg.Member, "principal", who, "subscribed_by", p.cfg.Principal, "message", fmt.Sprintf("%T", ctx.Message()))
	return false
}

func (p *pusher) onAssign(ctx actor.Context, a *pusherAssign) {
	p.generation = a.generation
	kept := map[cluster.TopicPartition]*pushCursor{}
	for _, tp := range a.partitions {
		if cur, ok := p.cursors[tp]; ok {
			kept[tp] = cur
			continue
		}
		cur := &pushCursor{offset: -1}
		if off, ok := a.committed[tp]; ok {
			cur.offset = off
		} else if a.reset == "latest" {
			cur.offset = -2 // resolve to the end
		}
		kept[tp] = cur
	}
	p.cursors = kept
	p.order = slices.Clone(a.partitions)
	slices.SortFunc(p.order, compareTP)
	assigned := map[string][]int32{}
	for _, tp := range p.order {
		assigned[tp.Topic] = append(assigned[tp.Topic], tp.Partition)
	}
	msg := &messages.PushAssignment{Group: p.cfg.Group, MemberId: p.cfg.Member, Generation: p.generation}
	for topic, parts := range assigned {
		msg.Assigned = append(msg.Assigned, &messages.TopicPartitions{Topic: topic, Partitions: parts})
	}
	slices.SortFunc(msg.Assigned, func(x, y *messages.TopicPartitions) int {
		if x.Topic < y.Topic {
			return -1
		} else if x.Topic > y.Topic {
			return 1
		}
		return 0
	})
	ctx.Request(p.cfg.Target, msg)
	p.pump(ctx)
}

// pump delivers buffered records within the credit, then starts fetches for
// partitions with nothing buffered.
func (p *pusher) pump(ctx actor.Context) {
	p.deliver(ctx)
	if p.credit <= 0 {
		return
	}
	for _, tp := range p.order {
		cur := p.cursors[tp]
		if cur == nil || cur.inflight || len(cur.buffered) > 0 {
			continue
		}
		p.fetch(ctx, tp, cur)
	}
}

// deliver sends buffered records, at most the remaining credit, taking
// partitions in turn.
func (p *pusher) deliver(ctx actor.Context) {
	for p.credit > 0 && len(p.order) > 0 {
		sent := false
		for i := 0; i < len(p.order) && p.credit > 0; i++ {
			tp := p.order[(p.next+i)%len(p.order)]
			cur := p.cursors[tp]
			if cur == nil || len(cur.buffered) == 0 {
				continue
			}
			n := min(p.credit, len(cur.buffered))
			recs := cur.buffered[:n]
			cur.buffered = cur.buffered[n:]
			p.credit -= n
			ctx.Request(p.cfg.Target, &messages.PushRecords{Group: p.cfg.Group, MemberId: p.cfg.Member,
				Generation: p.generation, Records: recs})
			p.next = (p.next + i + 1) % len(p.order)
			sent = true
		}
		if !sent {
			return
		}
	}
}

// fetch reads the next records of tp from its leader (resolving the start
// offset first when there is no commit).
func (p *pusher) fetch(ctx actor.Context, tp cluster.TopicPartition, cur *pushCursor) {
	addr, ok := p.leader(tp)
	if !ok {
		p.refresh(ctx)
		return
	}
	cur.inflight = true
	gen := p.generation
	if cur.offset < 0 {
		ts := int64(-2)
		if cur.offset == -2 {
			ts = -1
		}
		req := &messages.ListOffsetsRequest{Topic: tp.Topic, Partition: tp.Partition, Timestamp: ts, CurrentLeaderEpoch: -1}
		p.ask(ctx, addr, req, func(m proto.Message, err error) {
			cur.inflight = false
			resp, ok := m.(*messages.ListOffsetsResponse)
			if err != nil || !ok || resp.Error != messages.ErrorCode_NONE {
				p.failed(ctx)
				return
			}
			cur.offset = resp.Offset
			p.pump(ctx)
		})
		return
	}
	req := &messages.FetchRequest{Topic: tp.Topic, Partition: tp.Partition, Offset: cur.offset, MaxBytes: 1 << 20,
		MinBytes: 1, MaxWaitMs: 500, CurrentLeaderEpoch: -1}
	p.ask(ctx, addr, req, func(m proto.Message, err error) {
		cur.inflight = false
		if p.cursors[tp] != cur || p.generation != gen {
			return // revoked meanwhile
		}
		resp, ok := m.(*messages.FetchResponse)
		switch {
		case err != nil || !ok:
			p.failed(ctx)
			return
		case resp.Error == messages.ErrorCode_OFFSET_OUT_OF_RANGE:
			cur.offset = -1 // start again from the log start
		case resp.Error != messages.ErrorCode_NONE:
			p.failed(ctx)
			return
		default:
			recs, next, derr := pushRecords(tp, resp.Batches, cur.offset)
			if derr != nil {
				p.cfg.Broker.Logger.Warn("push fetch returned a corrupt batch", "group", p.cfg.Group, "partition", tp, "error", derr)
				p.failed(ctx)
				return
			}
			cur.buffered = append(cur.buffered, recs...)
			cur.offset = next
		}
		p.pump(ctx)
	})
}

func (p *pusher) ask(ctx actor.Context, addr string, req proto.Message, then func(proto.Message, error)) {
	reply.Ask(ctx, transport.BrokerPID(addr), req, 10*time.Second, func(res any, err error) {
		m, _ := res.(proto.Message)
		if err == nil && m == nil {
			err = fmt.Errorf("unexpected answer %T", res)
		}
		then(m, err)
	})
}

// failed refreshes leadership and tries again a little later.
func (p *pusher) failed(ctx actor.Context) {
	p.leaders = nil
	if p.retrying {
		return
	}
	p.retrying = true
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(200*time.Millisecond, func() { root.Send(self, pusherRetry{}) })
}

// leader returns the address of tp's leader from the cached metadata.
func (p *pusher) leader(tp cluster.TopicPartition) (string, bool) {
	id, ok := p.leaders[tp]
	if !ok {
		return "", false
	}
	addr, ok := p.brokers[id]
	return addr, ok
}

// refresh asks the local broker for brokers and leaders.
func (p *pusher) refresh(ctx actor.Context) {
	if p.refreshing {
		return
	}
	p.refreshing = true
	reply.Ask(ctx, p.cfg.BrokerPID, &messages.MetadataRequest{}, 5*time.Second, func(res any, err error) {
		p.refreshing = false
		md, ok := res.(*messages.MetadataResponse)
		if err != nil || !ok {
			p.failed(ctx)
			return
		}
		p.brokers = map[int32]string{}
		for _, b := range md.Brokers {
			p.brokers[b.Id] = b.Address
		}
		p.leaders = map[cluster.TopicPartition]int32{}
		for _, t := range md.Topics {
			for _, pm := range t.Partitions {
				if pm.Leader >= 0 {
					p.leaders[cluster.TopicPartition{Topic: t.Name, Partition: pm.Partition}] = pm.Leader
				}
			}
		}
		p.pump(ctx)
	})
}

// pushRecords decodes fetched batches into records at or after from.
func pushRecords(tp cluster.TopicPartition, batches [][]byte, from int64) ([]*messages.PushedRecord, int64, error) {
	next := from
	var out []*messages.PushedRecord
	for _, b := range batches {
		h, err := record.CheckCRC(b)
		if err != nil {
			return out, next, err
		}
		it := record.Records(b)
		for {
			r, ok, err := it.Next()
			if err != nil {
				return out, next, err
			}
			if !ok {
				break
			}
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off < from {
				continue
			}
			pr := &messages.PushedRecord{Topic: tp.Topic, Partition: tp.Partition, Offset: off,
				Key: r.Key, Value: r.Value, TimestampMs: h.BaseTimestamp + r.TimestampDelta}
			if r.HeaderCount() > 0 {
				hs, err := r.Headers(make([]record.RecordHeader, 0, r.HeaderCount()))
				if err != nil {
					return out, next, err
				}
				for _, rh := range hs {
					pr.Headers = append(pr.Headers, &messages.RecordHeader{Key: []byte(rh.Key), Value: rh.Value})
				}
			}
			out = append(out, pr)
		}
		next = max(next, h.NextOffset())
	}
	return out, next, nil
}
