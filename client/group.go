package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// groupConfig holds the options of a GroupConsumer.
type groupConfig struct {
	clientID           string
	assignors          []string
	sessionTimeout     time.Duration
	rebalanceTimeout   time.Duration
	heartbeatInterval  time.Duration
	autoCommitInterval time.Duration
	onAssigned         func(map[string][]int32)
	onRevoked          func(map[string][]int32)
}

// Assignors lists the assignment strategies the member supports, preferred
// first: "range" (the default), "roundrobin", "sticky".
func Assignors(names ...string) MemberOpt {
	return memberOpt(func(c *config) { c.group.assignors = names })
}

// SessionTimeout is how long the coordinator waits for a heartbeat before
// it evicts the member. Default 10 s.
func SessionTimeout(d time.Duration) GroupOpt {
	return groupOpt(func(c *config) { c.group.sessionTimeout = d })
}

// RebalanceTimeout is how long a rebalance waits for members to rejoin. Default 30 s.
func RebalanceTimeout(d time.Duration) GroupOpt {
	return groupOpt(func(c *config) { c.group.rebalanceTimeout = d })
}

// HeartbeatInterval is how often the member heartbeats. Default a third of the session timeout.
func HeartbeatInterval(d time.Duration) GroupOpt {
	return groupOpt(func(c *config) { c.group.heartbeatInterval = d })
}

// AutoCommitInterval commits consumed positions this often, and before a
// rebalance and on Close. 0 disables auto-commit (commit with
// CommitUncommitted or CommitOffsets). Default 5 s.
func AutoCommitInterval(d time.Duration) GroupOpt {
	return groupOpt(func(c *config) { c.group.autoCommitInterval = d })
}

// ClientID names the member in `sluice group describe`. Default the host name.
func ClientID(id string) MemberOpt { return memberOpt(func(c *config) { c.group.clientID = id }) }

// OnAssigned is called with the partitions the member owns in a new
// generation. It runs on the member's actor: keep it short.
func OnAssigned(f func(map[string][]int32)) GroupOpt {
	return groupOpt(func(c *config) { c.group.onAssigned = f })
}

// OnRevoked is called with the partitions the member gives up before a
// rebalance, after their positions were committed (with auto-commit).
func OnRevoked(f func(map[string][]int32)) GroupOpt {
	return groupOpt(func(c *config) { c.group.onRevoked = f })
}

// GroupConsumer consumes the partitions a consumer group assigns it: each
// partition of the group's topics goes to exactly one member. Records come
// from PollFetches; consumed positions are committed to the group.
type GroupConsumer struct {
	cfg    config
	gcfg   groupConfig
	group  string
	topics []string
	node   *node
	meta   *metadata
	inner  *Consumer
	pid    *actor.PID

	mu sync.Mutex
	// positions are the next offsets to commit of the partitions polled in
	// generation posGen; they are committed with that generation, so a
	// commit after the group moved on is refused.
	positions map[topicPartition]int64
	posGen    int32
	committed map[topicPartition]int64
	// waiting are owned partitions not consumed for lack of a committed
	// offset (NoResetOffset); committing one starts it.
	waiting map[topicPartition]bool
	// startNoted wakes awaitStarts when a partition's start is learnt.
	startNoted chan struct{}
	memberID   string
	generation int32
	coord      string
	closed     bool
}

// NewGroupConsumer joins group and consumes topics. Besides the group
// options (Assignors, SessionTimeout, AutoCommitInterval, OnAssigned, ...),
// the consumer options apply: FetchMaxBytes, FetchMaxWait, and
// ConsumeResetOffset for partitions without a committed offset: AtStart
// (the default), AtEnd, or NoResetOffset, which leaves such a partition
// unconsumed and reports ErrNoCommittedOffset for it in PollFetches.
func NewGroupConsumer(broker, group string, topics []string, opts ...GroupOpt) (*GroupConsumer, error) {
	if group == "" || len(topics) == 0 {
		return nil, errors.New("a group consumer needs a group and topics")
	}
	cfg := configOf(opts)
	g := cfg.group
	if g.heartbeatInterval <= 0 {
		g.heartbeatInterval = g.sessionTimeout / 3
	}
	inner, err := newConsumer(broker, cfg)
	if err != nil {
		return nil, err
	}
	c := &GroupConsumer{cfg: cfg, gcfg: g, group: group, topics: slices.Clone(topics), node: inner.node,
		meta: newMetadata(inner.node.system, broker, cfg.requestTimeout, cfg.metadataMaxAge), inner: inner,
		positions: map[topicPartition]int64{}, committed: map[topicPartition]int64{}, waiting: map[topicPartition]bool{},
		startNoted: make(chan struct{}, 1)}
	inner.started = c.noteStart
	c.pid = c.node.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &groupMember{c: c} }))
	return c, nil
}

// noteStart makes where an owned partition without a committed offset
// starts its position, as Kafka's consumer does: the next commit stores
// it, so the group resumes there, not at a reset made again later (the
// end, by then past records never read).
func (c *GroupConsumer) noteStart(tp topicPartition, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pos, owned := c.positions[tp]; owned && pos < 0 {
		c.positions[tp] = offset
		select {
		case c.startNoted <- struct{}{}:
		default:
		}
	}
}

// startsWait bounds how long Close waits for the starts of owned
// partitions still being looked up (a leader that does not answer).
const startsWait = 5 * time.Second

// awaitStarts waits, for at most d, until every owned partition's start is
// known, so that the last commit holds them all: a member that read one
// partition and stops has usually learnt where the others start, but not
// always.
func (c *GroupConsumer) awaitStarts(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		c.mu.Lock()
		unknown := 0
		for tp, pos := range c.positions {
			if pos < 0 && !c.waiting[tp] {
				unknown++
			}
		}
		c.mu.Unlock()
		if unknown == 0 {
			return
		}
		select {
		case <-c.startNoted:
		case <-timer.C:
			return
		}
	}
}

// PollFetches returns the records fetched for the partitions the member
// owns, and records their positions for the next commit.
func (c *GroupConsumer) PollFetches(ctx context.Context) Fetches { return c.PollRecords(ctx, 0) }

// PollRecords is PollFetches returning at most max records.
func (c *GroupConsumer) PollRecords(ctx context.Context, max int) Fetches {
	for {
		f := c.inner.PollRecords(ctx, max)
		c.mu.Lock()
		kept := f.Records[:0]
		for _, r := range f.Records {
			tp := topicPartition{r.Topic, r.Partition}
			// Records of partitions revoked since they were fetched are dropped.
			if pos, owned := c.positions[tp]; owned {
				kept = append(kept, r)
				c.positions[tp] = max64(pos, r.Offset+1)
			}
		}
		c.mu.Unlock()
		f.Records = kept
		if len(f.Records) > 0 || len(f.Errors) > 0 || ctx.Err() != nil {
			return f
		}
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// Positions returns, for each partition the member owns, the offset of the
// next record it will poll (as Kafka's position()): the committed offset
// or where the reset policy started it, moved on by each record polled;
// -1 while that is still being looked up.
func (c *GroupConsumer) Positions() map[string]map[int32]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[int32]int64{}
	for tp, pos := range c.positions {
		if out[tp.topic] == nil {
			out[tp.topic] = map[int32]int64{}
		}
		out[tp.topic][tp.partition] = pos
	}
	return out
}

// MemberID and Generation are the member's current identity in the group.
func (c *GroupConsumer) MemberID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.memberID
}

// Generation is the group generation the member's assignment belongs to.
func (c *GroupConsumer) Generation() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

// CommitUncommitted commits the positions of every record polled so far,
// in the generation they were polled in: once the group has moved to a new
// generation without this member (it was evicted), the commit fails with
// ILLEGAL_GENERATION.
func (c *GroupConsumer) CommitUncommitted(ctx context.Context) error {
	c.mu.Lock()
	gen := c.posGen
	offsets := map[string]map[int32]int64{}
	for tp, pos := range c.positions {
		if pos >= 0 && pos != c.committed[tp] {
			if offsets[tp.topic] == nil {
				offsets[tp.topic] = map[int32]int64{}
			}
			offsets[tp.topic][tp.partition] = pos
		}
	}
	c.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	return c.commit(ctx, gen, offsets)
}

// CommitOffsets commits next-offsets (the offset of the next record to
// read) for partitions, with the member's current generation. An owned
// partition left unconsumed for lack of a committed offset
// (ErrNoCommittedOffset) starts at the offset committed for it.
func (c *GroupConsumer) CommitOffsets(ctx context.Context, offsets map[string]map[int32]int64) error {
	return c.commit(ctx, c.Generation(), offsets)
}

func (c *GroupConsumer) commit(ctx context.Context, gen int32, offsets map[string]map[int32]int64) error {
	c.mu.Lock()
	member, coord := c.memberID, c.coord
	c.mu.Unlock()
	if coord == "" {
		return &messages.Error{Code: messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, Message: "not joined yet"}
	}
	req := &messages.OffsetCommitRequest{Group: c.group, MemberId: member, Generation: gen}
	for topic, parts := range offsets {
		for p, off := range parts {
			req.Offsets = append(req.Offsets, &messages.OffsetCommitEntry{Topic: topic, Partition: p, Offset: off})
		}
	}
	res, err := request(c.node.system, coord, req, c.timeout(ctx))
	if err != nil {
		return err
	}
	resp, ok := res.(*messages.OffsetCommitResponse)
	if !ok {
		return fmt.Errorf("unexpected answer %T", res)
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return err
	}
	start := map[topicPartition]int64{}
	c.mu.Lock()
	for _, o := range req.Offsets {
		tp := topicPartition{o.Topic, o.Partition}
		c.committed[tp] = o.Offset
		if c.waiting[tp] {
			start[tp] = o.Offset
		}
	}
	c.mu.Unlock()
	if len(start) > 0 {
		// The member actor starts them: it orders this with revocations.
		c.node.system.Root.Send(c.pid, memberStart{gen: gen, offsets: start})
	}
	return nil
}

func (c *GroupConsumer) timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(min(time.Until(d), c.cfg.requestTimeout), time.Millisecond)
	}
	return c.cfg.requestTimeout
}

// Close commits (with auto-commit), leaves the group at once, and stops.
func (c *GroupConsumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var err error
	if c.gcfg.autoCommitInterval > 0 {
		c.awaitStarts(startsWait)
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
		err = c.CommitUncommitted(ctx)
		cancel()
	}
	_ = c.node.system.Root.StopFuture(c.pid).Wait()
	c.inner.Close()
	return err
}

// ---- member actor ---------------------------------------------------------------

type (
	memberStep      struct{ gen uint64 }
	memberHeartbeat struct{ gen uint64 }
	memberCommit    struct{}
	// memberStart starts waiting partitions at the offsets just committed
	// for them in generation gen.
	memberStart struct {
		gen     int32
		offsets map[topicPartition]int64
	}
)

// groupMember runs the membership protocol: find the coordinator, join,
// sync, heartbeat; on a rebalance, commit and revoke, then join again.
type groupMember struct {
	c        *GroupConsumer
	coord    string
	memberID string
	gen      int32
	owned    map[string][]int32
	// step guards timers and answers of an earlier round.
	step    uint64
	backoff time.Duration
	ticker  *time.Ticker
	stopped chan struct{}
}

func (m *groupMember) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		m.stopped = make(chan struct{})
		if iv := m.c.gcfg.autoCommitInterval; iv > 0 {
			m.ticker = time.NewTicker(iv)
			self, root, t, stop := ctx.Self(), ctx.ActorSystem().Root, m.ticker, m.stopped
			go func() {
				for {
					select {
					case <-t.C:
						root.Send(self, memberCommit{})
					case <-stop:
						return
					}
				}
			}()
		}
		m.find(ctx)
	case *actor.Stopping:
		if m.ticker != nil {
			m.ticker.Stop()
		}
		close(m.stopped)
		m.leave()
	case memberStep:
		if msg.gen == m.step {
			m.find(ctx)
		}
	case memberHeartbeat:
		if msg.gen == m.step {
			m.heartbeat(ctx)
		}
	case memberCommit:
		m.autoCommit()
	case memberStart:
		m.startWaiting(msg)
	}
}

// retry restarts the protocol from finding the coordinator after a pause.
func (m *groupMember) retry(ctx actor.Context, why string) {
	m.step++
	m.backoff = min(max(2*m.backoff, 50*time.Millisecond), time.Second)
	m.c.cfg.logger.Debug("group member retrying", "group", m.c.group, "reason", why)
	self, root, gen := ctx.Self(), ctx.ActorSystem().Root, m.step
	time.AfterFunc(m.backoff, func() { root.Send(self, memberStep{gen}) })
}

// retryAfter retries after err; an error no retry can cure by itself (the
// group or its topics are not allowed to this principal, its credentials
// were refused) is also reported to the poller, as Kafka's consumer throws
// it from poll. The member keeps trying: an ACL added later lets it in.
func (m *groupMember) retryAfter(ctx actor.Context, err error) {
	for _, code := range []messages.ErrorCode{messages.ErrorCode_GROUP_AUTHORIZATION_FAILED, messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED,
		messages.ErrorCode_SASL_AUTHENTICATION_FAILED} {
		if errors.Is(err, code) {
			m.c.inner.push(nil, []FetchError{{Partition: -1, Err: fmt.Errorf("group %q: %w", m.c.group, err)}})
			break
		}
	}
	m.retry(ctx, err.Error())
}

// ask sends a request and hands its decoded answer to then, unless a newer
// round started meanwhile.
func (m *groupMember) ask(ctx actor.Context, addr string, req proto.Message, timeout time.Duration, then func(proto.Message, error)) {
	step := m.step
	reply.Ask(ctx, brokerPID(ctx.ActorSystem(), addr), req, timeout, func(res any, err error) {
		if step != m.step {
			return
		}
		msg, err := decodeResult(addr, res, err)
		then(msg, err)
	})
}

func (m *groupMember) find(ctx actor.Context) {
	addrs := m.c.meta.addrs()
	addr := addrs[int(m.step)%len(addrs)]
	m.ask(ctx, addr, &messages.FindCoordinatorRequest{Group: m.c.group}, 5*time.Second, func(res proto.Message, err error) {
		resp, ok := res.(*messages.FindCoordinatorResponse)
		switch {
		case err != nil:
			m.retryAfter(ctx, err)
		case !ok:
			m.retry(ctx, fmt.Sprintf("find coordinator: unexpected answer %T", res))
		case resp.Error != messages.ErrorCode_NONE:
			m.retryAfter(ctx, fmt.Errorf("find coordinator: %w", resp.Error.Err(resp.ErrorMessage)))
		default:
			m.coord = resp.Address
			m.c.mu.Lock()
			m.c.coord = resp.Address
			m.c.mu.Unlock()
			if m.gen > 0 && m.memberID != "" {
				m.heartbeat(ctx) // a new coordinator may still know us
			} else {
				m.join(ctx)
			}
		}
	})
}

func (m *groupMember) join(ctx actor.Context) {
	g := m.c.gcfg
	req := &messages.JoinGroupRequest{Group: m.c.group, MemberId: m.memberID, ClientId: g.clientID,
		SessionTimeoutMs: int32(g.sessionTimeout.Milliseconds()), RebalanceTimeoutMs: int32(g.rebalanceTimeout.Milliseconds()),
		Topics: m.c.topics, Assignors: g.assignors}
	m.ask(ctx, m.coord, req, g.rebalanceTimeout+10*time.Second, func(res proto.Message, err error) {
		resp, ok := res.(*messages.JoinGroupResponse)
		switch {
		case err != nil:
			m.retry(ctx, err.Error())
		case !ok:
			m.retry(ctx, fmt.Sprintf("unexpected answer %T", res))
		case resp.Error == messages.ErrorCode_MEMBER_ID_REQUIRED:
			m.memberID = resp.MemberId
			m.join(ctx)
		case resp.Error == messages.ErrorCode_UNKNOWN_MEMBER_ID:
			m.memberID = ""
			m.join(ctx)
		case resp.Error == messages.ErrorCode_REBALANCE_IN_PROGRESS:
			m.join(ctx)
		case resp.Error != messages.ErrorCode_NONE:
			m.retryAfter(ctx, fmt.Errorf("join group: %w", resp.Error.Err(resp.ErrorMessage)))
		default:
			m.memberID, m.gen = resp.MemberId, resp.Generation
			m.backoff = 0
			m.sync(ctx)
		}
	})
}

func (m *groupMember) sync(ctx actor.Context) {
	req := &messages.SyncGroupRequest{Group: m.c.group, MemberId: m.memberID, Generation: m.gen}
	m.ask(ctx, m.coord, req, m.c.cfg.requestTimeout, func(res proto.Message, err error) {
		resp, ok := res.(*messages.SyncGroupResponse)
		switch {
		case err != nil:
			m.retry(ctx, err.Error())
		case !ok:
			m.retry(ctx, fmt.Sprintf("unexpected answer %T", res))
		case resp.Error == messages.ErrorCode_REBALANCE_IN_PROGRESS || resp.Error == messages.ErrorCode_ILLEGAL_GENERATION:
			m.join(ctx)
		case resp.Error == messages.ErrorCode_UNKNOWN_MEMBER_ID:
			m.memberID = ""
			m.join(ctx)
		case resp.Error != messages.ErrorCode_NONE:
			m.retry(ctx, resp.Error.String())
		default:
			m.assign(ctx, resp.Assignment)
		}
	})
}

// assign starts consuming a new generation's partitions from their
// committed offsets (or the reset policy).
func (m *groupMember) assign(ctx actor.Context, assignment []*messages.TopicPartitions) {
	owned := map[string][]int32{}
	fetch := &messages.OffsetFetchRequest{Group: m.c.group}
	for _, tps := range assignment {
		owned[tps.Topic] = slices.Clone(tps.Partitions)
		fetch.Partitions = append(fetch.Partitions, tps)
	}
	m.ask(ctx, m.coord, fetch, m.c.cfg.requestTimeout, func(res proto.Message, err error) {
		resp, ok := res.(*messages.OffsetFetchResponse)
		if err != nil || !ok || resp.Error != messages.ErrorCode_NONE {
			m.retry(ctx, fmt.Sprintf("offset fetch: %v %v", err, resp.GetError()))
			return
		}
		starts := map[string]map[int32]Offset{}
		var missing []FetchError
		m.c.mu.Lock()
		m.c.positions = map[topicPartition]int64{}
		m.c.committed = map[topicPartition]int64{}
		m.c.waiting = map[topicPartition]bool{}
		for _, o := range resp.Offsets {
			if starts[o.Topic] == nil {
				starts[o.Topic] = map[int32]Offset{}
			}
			tp := topicPartition{o.Topic, o.Partition}
			m.c.positions[tp], m.c.committed[tp] = max(o.Offset, -1), max(o.Offset, -1)
			switch {
			case o.Offset >= 0:
				starts[o.Topic][o.Partition] = AtOffset(o.Offset)
			case m.c.cfg.resetOffset.at == noReset:
				// auto.offset.reset=none: tell the poller, do not guess.
				m.c.waiting[tp] = true
				missing = append(missing, FetchError{Topic: o.Topic, Partition: o.Partition,
					Err: fmt.Errorf("%w: group %q, %s-%d", ErrNoCommittedOffset, m.c.group, o.Topic, o.Partition)})
			default:
				starts[o.Topic][o.Partition] = m.c.cfg.resetOffset
			}
		}
		m.c.memberID, m.c.generation, m.c.posGen = m.memberID, m.gen, m.gen
		m.c.mu.Unlock()
		m.owned = owned
		m.c.inner.startPartitions(starts)
		if len(missing) > 0 {
			m.c.inner.push(nil, missing)
		}
		if f := m.c.gcfg.onAssigned; f != nil {
			f(owned)
		}
		m.scheduleHeartbeat(ctx)
	})
}

func (m *groupMember) scheduleHeartbeat(ctx actor.Context) {
	self, root, gen := ctx.Self(), ctx.ActorSystem().Root, m.step
	time.AfterFunc(m.c.gcfg.heartbeatInterval, func() { root.Send(self, memberHeartbeat{gen}) })
}

func (m *groupMember) heartbeat(ctx actor.Context) {
	req := &messages.HeartbeatRequest{Group: m.c.group, MemberId: m.memberID, Generation: m.gen}
	m.ask(ctx, m.coord, req, m.c.gcfg.sessionTimeout, func(res proto.Message, err error) {
		resp, ok := res.(*messages.HeartbeatResponse)
		switch {
		case err != nil:
			m.retry(ctx, err.Error()) // find the coordinator again; keep our generation
		case !ok:
			m.retry(ctx, fmt.Sprintf("unexpected answer %T", res))
		case resp.Error == messages.ErrorCode_NONE:
			if m.owned == nil {
				m.sync(ctx) // a new coordinator knew us: fetch our assignment
				return
			}
			m.scheduleHeartbeat(ctx)
		case resp.Error == messages.ErrorCode_REBALANCE_IN_PROGRESS:
			m.revoke(true)
			m.join(ctx)
		case resp.Error == messages.ErrorCode_ILLEGAL_GENERATION:
			m.revoke(false)
			m.join(ctx)
		case resp.Error == messages.ErrorCode_UNKNOWN_MEMBER_ID:
			m.revoke(false)
			m.memberID = ""
			m.join(ctx)
		default:
			m.retry(ctx, resp.Error.String())
		}
	})
}

// revoke gives up every owned partition; with commit, their positions are
// committed first (still allowed in this generation while it rebalances).
func (m *groupMember) revoke(commit bool) {
	if m.owned == nil {
		return
	}
	if commit {
		m.autoCommit()
	}
	m.c.inner.RemovePartitions(m.owned)
	// The callback may still commit (and learn whether its generation holds).
	if f := m.c.gcfg.onRevoked; f != nil {
		f(m.owned)
	}
	m.c.mu.Lock()
	m.c.positions = map[topicPartition]int64{}
	m.c.waiting = map[topicPartition]bool{}
	m.c.mu.Unlock()
	m.owned = nil
}

// startWaiting starts partitions that had no committed offset at the
// offsets since committed for them, unless they were revoked meanwhile.
func (m *groupMember) startWaiting(s memberStart) {
	starts := map[string]map[int32]Offset{}
	m.c.mu.Lock()
	for tp, off := range s.offsets {
		if s.gen != m.c.posGen || !m.c.waiting[tp] {
			continue
		}
		delete(m.c.waiting, tp)
		m.c.positions[tp] = off
		if starts[tp.topic] == nil {
			starts[tp.topic] = map[int32]Offset{}
		}
		starts[tp.topic][tp.partition] = AtOffset(off)
	}
	m.c.mu.Unlock()
	if len(starts) > 0 {
		m.c.inner.startPartitions(starts)
	}
}

// autoCommit commits polled positions, when auto-commit is on. It blocks the
// member briefly: commits must not overtake a rejoin.
func (m *groupMember) autoCommit() {
	if m.c.gcfg.autoCommitInterval <= 0 || m.owned == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.c.cfg.requestTimeout)
	defer cancel()
	if err := m.c.CommitUncommitted(ctx); err != nil {
		m.c.cfg.logger.Warn("auto-commit failed", "group", m.c.group, "error", err)
	}
}

// leave tells the coordinator the member is gone, so the group rebalances at once.
func (m *groupMember) leave() {
	if m.coord == "" || m.memberID == "" {
		return
	}
	_, _ = request(m.c.node.system, m.coord, &messages.LeaveGroupRequest{Group: m.c.group, MemberId: m.memberID}, 5*time.Second)
}
