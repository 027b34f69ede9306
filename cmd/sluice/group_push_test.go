package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// pushSubscriber is an application actor subscribed to a group. It holds
// the records it is pushed and works through them one at a time, a step
// (a message to itself) every pace, so that it always has records in hand:
// for each record done it grants one record of credit back to the pusher
// that pushed it and acknowledges it. At every PushRecords it checks flow
// control per pusher: the records received from a pusher never exceed the
// initial credit plus the credit granted to that pusher so far. Grants are
// counted when sent, before the broker can use them, so the check is never
// lenient; and since the actor holds records while it works, a broker that
// pushed past the credit would be caught.
type pushSubscriber struct {
	credit int
	pace   time.Duration

	// Owned by the actor.
	queue   []heldRecord
	working bool

	mu          sync.Mutex
	pushers     []string       // in the order of their first PushRecords
	received    map[string]int // pusher -> records received from it
	granted     map[string]int // pusher -> credit granted back to it
	maxHeld     int            // most records held from one pusher at a PushRecords
	violations  []string
	done        map[string]int // value -> times processed
	assignments []*messages.PushAssignment
	assigner    *actor.PID // the pusher of the latest assignment
}

type heldRecord struct {
	rec           *messages.PushedRecord
	from          *actor.PID
	group, member string
	generation    int32
}

type pushStep struct{}

func newPushSubscriber(credit int, pace time.Duration) *pushSubscriber {
	return &pushSubscriber{credit: credit, pace: pace, received: map[string]int{}, granted: map[string]int{}, done: map[string]int{}}
}

// spawnSubscriber starts s on the client's actor system and subscribes it
// to group; the subscription is closed when the test ends.
func spawnSubscriber(t *testing.T, s *pushSubscriber, brokers, group string, topics []string, opts ...client.SubscribeOpt) (*actor.PID, *client.Subscription) {
	t.Helper()
	system, err := client.System(testClientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return s }))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := client.Subscribe(ctx, brokers, group, topics, pid, append([]client.SubscribeOpt{sharedOpts(), client.SubscribeCredit(s.credit)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		system.Root.Stop(pid)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sub.Close(ctx) // the member may be gone already
	})
	return pid, sub
}

func (s *pushSubscriber) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.PushAssignment:
		s.mu.Lock()
		s.assignments = append(s.assignments, m)
		s.assigner = ctx.Sender()
		s.mu.Unlock()
	case *messages.PushRecords:
		s.onRecords(ctx, m)
	case pushStep:
		s.step(ctx)
	}
}

func (s *pushSubscriber) onRecords(ctx actor.Context, m *messages.PushRecords) {
	from := ctx.Sender()
	key := from.String()
	s.mu.Lock()
	if _, seen := s.received[key]; !seen {
		s.pushers = append(s.pushers, key)
	}
	s.received[key] += len(m.Records)
	s.maxHeld = max(s.maxHeld, s.received[key]-s.granted[key])
	if s.received[key] > s.credit+s.granted[key] && len(s.violations) < 5 {
		s.violations = append(s.violations, fmt.Sprintf("pusher %s: %d records received with a credit of %d and %d granted since",
			key, s.received[key], s.credit, s.granted[key]))
	}
	s.mu.Unlock()
	for _, r := range m.Records {
		s.queue = append(s.queue, heldRecord{rec: r, from: from, group: m.Group, member: m.MemberId, generation: m.Generation})
	}
	s.schedule(ctx)
}

func (s *pushSubscriber) schedule(ctx actor.Context) {
	if s.working || len(s.queue) == 0 {
		return
	}
	s.working = true
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(s.pace, func() { root.Send(self, pushStep{}) })
}

// step processes the oldest record held: it counts it, grants its credit
// back and acknowledges it.
func (s *pushSubscriber) step(ctx actor.Context) {
	s.working = false
	h := s.queue[0]
	s.queue = s.queue[1:]
	s.mu.Lock()
	s.done[string(h.rec.Value)]++
	s.granted[h.from.String()]++
	s.mu.Unlock()
	ctx.Send(h.from, &messages.PushCredit{Group: h.group, MemberId: h.member, Credit: 1})
	ctx.Send(h.from, &messages.PushAck{Group: h.group, MemberId: h.member, Topic: h.rec.Topic,
		Partition: h.rec.Partition, NextOffset: h.rec.Offset + 1, Generation: h.generation})
	s.schedule(ctx)
}

// lastAssignment is the generation and partitions (of all topics) of the
// latest PushAssignment, generation 0 before the first.
func (s *pushSubscriber) lastAssignment() (int32, []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.assignments) == 0 {
		return 0, nil
	}
	a := s.assignments[len(s.assignments)-1]
	var parts []int32
	for _, tps := range a.Assigned {
		parts = append(parts, tps.Partitions...)
	}
	slices.Sort(parts)
	return a.Generation, parts
}

// processed returns how often each value was processed.
func (s *pushSubscriber) processed() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.done)
}

// checkCredit fails the test if any pusher pushed past the credit.
func (s *pushSubscriber) checkCredit(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.violations {
		t.Error(v)
	}
}

// missingValues counts the values no subscriber processed.
func missingValues(sent []string, subs ...*pushSubscriber) int {
	seen := map[string]bool{}
	for _, s := range subs {
		for v := range s.processed() {
			seen[v] = true
		}
	}
	missing := 0
	for _, v := range sent {
		if !seen[v] {
			missing++
		}
	}
	return missing
}

// produceValues produces n records "<prefix>-<i>" with acks=all and returns
// their values.
func produceValues(t *testing.T, brokers, topic, prefix string, n int) []string {
	t.Helper()
	p, err := client.NewProducer(brokers, sharedOpts(), client.Acks(client.AllAcks))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var values []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%d", prefix, i)
		values = append(values, v)
		p.Produce(ctx, &client.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return values
}

// Two push subscribers share a topic; one's actor stops. The broker notices
// (its pusher watches the actor), the survivor ends up owning every
// partition, and every record is processed by one of them.
func TestPushDeadMemberPartitionsMove(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "moved", 4, nil)
	prod := startSteadyProducer(t, b.Addr, "moved")
	// The first is slow: it holds unprocessed, unacknowledged records when
	// it stops, which the survivor must get again.
	subs := []*pushSubscriber{newPushSubscriber(20, 20*time.Millisecond), newPushSubscriber(20, 100*time.Microsecond)}
	var pids []*actor.PID
	var members []string
	for _, s := range subs {
		pid, sub := spawnSubscriber(t, s, b.Addr, "gpm", []string{"moved"})
		pids, members = append(pids, pid), append(members, sub.MemberID())
	}
	var gen int32
	waitFor(t, "both subscribers owning a share of one generation", func() bool {
		g0, p0 := subs[0].lastAssignment()
		g1, p1 := subs[1].lastAssignment()
		gen = g0
		return g0 == g1 && len(p0) > 0 && len(p1) > 0 && len(p0)+len(p1) == 4 && !slices.ContainsFunc(p0, func(p int32) bool { return slices.Contains(p1, p) })
	})
	waitFor(t, "both subscribers processing", func() bool { return len(subs[0].processed()) > 0 && len(subs[1].processed()) > 0 })

	system, _ := client.System()
	if err := system.Root.StopFuture(pids[0]).Wait(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the survivor owning every partition", func() bool {
		g, parts := subs[1].lastAssignment()
		return g > gen && slices.Equal(parts, []int32{0, 1, 2, 3})
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := a.DescribeGroup(ctx, "gpm")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Members) != 1 || info.Members[0].MemberId != members[1] {
		t.Fatalf("members after the first subscriber stopped: %v, want only %s", info.Members, members[1])
	}
	more := len(prod.values()) + 200
	waitFor(t, "more records produced", func() bool { return len(prod.values()) >= more })
	prod.finish()
	sent := prod.values()
	waitFor(t, "every record processed", func() bool { return missingValues(sent, subs...) == 0 })
	for _, s := range subs {
		s.checkCredit(t)
	}
	t.Logf("%d records; processed by the stopped subscriber %d, by the survivor %d", len(sent), len(subs[0].processed()), len(subs[1].processed()))
}

// ackAnswer sends a PushAck as a request to the group's coordinator and
// returns the answer's error code.
func ackAnswer(t *testing.T, a *client.Admin, ack *messages.PushAck) messages.ErrorCode {
	t.Helper()
	res := groupAsk(t, a, ack.Group, ack)
	resp, ok := res.(*messages.OffsetCommitResponse)
	if !ok {
		t.Fatalf("push ack answered with %T", res)
	}
	return resp.Error
}

// committedOffsets returns a group's committed offset per partition.
func committedOffsets(t *testing.T, a *client.Admin, group string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := a.DescribeGroup(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, p := range info.Partitions {
		out[p.Partition] = p.Committed
	}
	return out
}

// A push member's ack commits only a partition it has owned without a break
// since the generation of the records acknowledged; other acks are refused
// with ILLEGAL_GENERATION (UNKNOWN_MEMBER_ID for a non-member), whether sent
// to the broker or through the member's pusher.
func TestPushAckChecksOwnership(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	a := newAdmin(t, b.Addr)
	// The topic stays empty: the subscribers get no records to ack, so
	// every commit is one of the test's acks.
	createTopic(t, a, "acked", 2, nil)
	first := newPushSubscriber(10, time.Millisecond)
	_, subA := spawnSubscriber(t, first, b.Addr, "gpa", []string{"acked"})
	waitFor(t, "the first subscriber's assignment", func() bool { _, parts := first.lastAssignment(); return len(parts) == 2 })
	g1, _ := first.lastAssignment()
	ack := func(member string, gen, partition int32, next int64) *messages.PushAck {
		return &messages.PushAck{Group: "gpa", MemberId: member, Topic: "acked", Partition: partition, NextOffset: next, Generation: gen}
	}
	expect := func(what string, a2 *messages.PushAck, want messages.ErrorCode) {
		t.Helper()
		if got := ackAnswer(t, a, a2); got != want {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	expect("an owned partition", ack(subA.MemberID(), g1, 0, 5), messages.ErrorCode_NONE)
	expect("a generation ahead of the group", ack(subA.MemberID(), g1+1, 0, 6), messages.ErrorCode_ILLEGAL_GENERATION)
	expect("a partition that does not exist", ack(subA.MemberID(), g1, 7, 6), messages.ErrorCode_ILLEGAL_GENERATION)
	expect("a member not in the group", ack("nobody", g1, 0, 6), messages.ErrorCode_UNKNOWN_MEMBER_ID)

	// A second subscriber: the partitions are split in a new generation.
	second := newPushSubscriber(10, time.Millisecond)
	_, subB := spawnSubscriber(t, second, b.Addr, "gpa", []string{"acked"})
	waitFor(t, "both subscribers owning one partition", func() bool {
		ga, pa := first.lastAssignment()
		gb, pb := second.lastAssignment()
		return ga > g1 && ga == gb && len(pa) == 1 && len(pb) == 1 && pa[0] != pb[0]
	})
	g2, kept := first.lastAssignment()
	_, moved := second.lastAssignment()
	expect("a late ack of a partition kept since", ack(subA.MemberID(), g1, kept[0], 7), messages.ErrorCode_NONE)
	expect("the new owner's ack", ack(subB.MemberID(), g2, moved[0], 3), messages.ErrorCode_NONE)
	expect("a late ack of a partition moved away", ack(subA.MemberID(), g1, moved[0], 9), messages.ErrorCode_ILLEGAL_GENERATION)
	expect("an ack of a partition owned by another", ack(subA.MemberID(), g2, moved[0], 9), messages.ErrorCode_ILLEGAL_GENERATION)
	expect("the new owner's ack of a generation before it owned it", ack(subB.MemberID(), g1, moved[0], 9), messages.ErrorCode_ILLEGAL_GENERATION)

	// Through the pusher, as an actor would ack with ctx.Request: the
	// pusher acks for its own member, whatever the ack says.
	first.mu.Lock()
	pusher := first.assigner
	first.mu.Unlock()
	system, _ := client.System()
	res, err := system.Root.RequestFuture(pusher, ack("", g1, moved[0], 9), 30*time.Second).Result()
	if r, ok := res.(*messages.OffsetCommitResponse); err != nil || !ok || r.Error != messages.ErrorCode_ILLEGAL_GENERATION {
		t.Fatalf("a stale ack through the pusher: %v %v, want ILLEGAL_GENERATION", res, err)
	}
	res, err = system.Root.RequestFuture(pusher, ack("", g2, kept[0], 8), 30*time.Second).Result()
	if r, ok := res.(*messages.OffsetCommitResponse); err != nil || !ok || r.Error != messages.ErrorCode_NONE {
		t.Fatalf("an ack through the pusher: %v %v", res, err)
	}

	// Only the accepted acks were committed.
	got := committedOffsets(t, a, "gpa")
	if want := map[int32]int64{kept[0]: 8, moved[0]: 3}; !maps.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
}

// A subscription asking for auto.offset.reset none is refused: a push
// member has no poll loop to report a partition without a commit to. So is
// a negative credit.
func TestPushSubscribeRefusesNoReset(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "nr", 1, nil)
	system, err := client.System()
	if err != nil {
		t.Fatal(err)
	}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return newPushSubscriber(1, time.Millisecond) }))
	defer system.Root.Stop(pid)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub, err := client.Subscribe(ctx, b.Addr, "gnr", []string{"nr"}, pid, client.ConsumeResetOffset(client.NoResetOffset()))
	if !errors.Is(err, client.ErrInvalidConfig) {
		t.Fatalf("subscribe with NoResetOffset: %v %v, want INVALID_CONFIG", sub, err)
	}
	sub, err = client.Subscribe(ctx, b.Addr, "gnr", []string{"nr"}, pid, client.SubscribeCredit(-1))
	if !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("subscribe with a negative credit: %v %v, want INVALID_REQUEST", sub, err)
	}
	if info, err := a.DescribeGroup(ctx, "gnr"); err != nil || len(info.Members) != 0 {
		t.Fatalf("group after the refused subscription: %v %v", info, err)
	}
}
