package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// produceTo produces n records "<prefix><i>" to one partition, acks=all.
func produceTo(t *testing.T, addr, topic string, partition int32, prefix string, from, n int) {
	t.Helper()
	p, err := client.NewProducer(addr, client.Acks(client.AllAcks), client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := from; i < from+n; i++ {
		v := fmt.Sprintf("%s%d", prefix, i)
		if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: topic, Partition: partition, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

// groupAsk sends a group request to the group's coordinator, again while
// the coordinator is loading or moving, and returns the answer.
func groupAsk(t *testing.T, a *client.Admin, group string, req proto.Message) proto.Message {
	t.Helper()
	var res proto.Message
	waitFor(t, "an answer from the coordinator of "+group, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		coord, err := a.FindCoordinator(ctx, group)
		if err != nil {
			return false
		}
		if res, err = a.Request(ctx, coord, req); err != nil {
			t.Fatalf("%T to %s: %v", req, coord, err)
		}
		code := res.(coded).GetError()
		return code != messages.ErrorCode_COORDINATOR_NOT_AVAILABLE && code != messages.ErrorCode_NOT_COORDINATOR
	})
	return res
}

// groupPoller is a GroupConsumer polled by the test goroutine, with what it
// returned and the assignments it was given.
type groupPoller struct {
	c    *client.GroupConsumer
	recs []*client.Record
	errs []error

	mu       sync.Mutex
	assigned []assignment
}

type assignment struct {
	generation int32
	partitions []int32
}

func newGroupPoller(t *testing.T, addr, group, topic string, opts ...client.GroupOpt) *groupPoller {
	t.Helper()
	gp := &groupPoller{}
	var c *client.GroupConsumer
	var ready sync.WaitGroup // OnAssigned may run before NewGroupConsumer returns
	ready.Add(1)
	opts = append([]client.GroupOpt{client.RequestTimeout(10 * time.Second)}, opts...)
	opts = append(opts, client.OnAssigned(func(parts map[string][]int32) {
		ready.Wait()
		ps := slices.Clone(parts[topic])
		slices.Sort(ps)
		gp.mu.Lock()
		gp.assigned = append(gp.assigned, assignment{c.Generation(), ps})
		gp.mu.Unlock()
	}))
	c, err := client.NewGroupConsumer(addr, group, []string{topic}, opts...)
	ready.Done()
	if err != nil {
		t.Fatal(err)
	}
	gp.c = c
	t.Cleanup(func() { c.Close() })
	return gp
}

// last is the latest assignment (generation 0 before the first).
func (gp *groupPoller) last() assignment {
	gp.mu.Lock()
	defer gp.mu.Unlock()
	if len(gp.assigned) == 0 {
		return assignment{}
	}
	return gp.assigned[len(gp.assigned)-1]
}

// pollUntil polls until done holds, failing after a minute.
func (gp *groupPoller) pollUntil(t *testing.T, what string, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !done() {
		f := gp.c.PollFetches(ctx)
		gp.recs = append(gp.recs, f.Records...)
		for _, e := range f.Errors {
			if ctx.Err() != nil {
				t.Fatalf("timed out polling for %s; polled %d records, %d errors (first: %v)", what, len(gp.recs), len(gp.errs), gp.errs[:min(len(gp.errs), 3)])
			}
			gp.errs = append(gp.errs, fmt.Errorf("%s-%d: %w", e.Topic, e.Partition, e.Err))
		}
	}
}

// offsets lists the offsets polled from a partition, in order.
func (gp *groupPoller) offsets(partition int32) []int64 {
	var out []int64
	for _, r := range gp.recs {
		if r.Partition == partition {
			out = append(out, r.Offset)
		}
	}
	return out
}

// With auto.offset.reset none, a partition the group has no commit for is
// not consumed: PollFetches reports ErrNoCommittedOffset for it, once,
// while committed partitions are consumed; committing an offset for it
// starts it there.
func TestGroupNoResetOffset(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "nreset", 2, nil)
	produceTo(t, b.Addr, "nreset", 0, "a", 0, 3)
	produceTo(t, b.Addr, "nreset", 1, "b", 0, 3)
	// An admin commit for partition 0 only.
	res := groupAsk(t, a, "gnone", &messages.OffsetCommitRequest{Group: "gnone", Generation: -1,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "nreset", Partition: 0, Offset: 1}}})
	if res.(*messages.OffsetCommitResponse).Error != messages.ErrorCode_NONE {
		t.Fatalf("admin commit: %v", res)
	}
	gp := newGroupPoller(t, b.Addr, "gnone", "nreset", client.ConsumeResetOffset(client.NoResetOffset()), client.AutoCommitInterval(0))
	noCommit := func() int {
		n := 0
		for _, e := range gp.errs {
			if errors.Is(e, client.ErrNoCommittedOffset) {
				n++
			}
		}
		return n
	}
	gp.pollUntil(t, "partition 0 from its commit and the error of partition 1", func() bool {
		return len(gp.offsets(0)) == 2 && noCommit() == 1
	})
	if len(gp.errs) != 1 || !slices.Equal(gp.offsets(0), []int64{1, 2}) {
		t.Fatalf("errors %v, partition 0 offsets %v; want one ErrNoCommittedOffset and 1, 2", gp.errs, gp.offsets(0))
	}
	// The member goes on consuming partition 0 without repeating the error
	// or touching partition 1.
	produceTo(t, b.Addr, "nreset", 0, "a", 3, 2)
	gp.pollUntil(t, "more of partition 0", func() bool { return len(gp.offsets(0)) == 4 })
	if len(gp.errs) != 1 || len(gp.offsets(1)) != 0 {
		t.Fatalf("errors %v, partition 1 offsets %v: want the one error and nothing of partition 1", gp.errs, gp.offsets(1))
	}
	// Committing an offset for partition 1 starts it there.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := gp.c.CommitOffsets(ctx, map[string]map[int32]int64{"nreset": {1: 1}}); err != nil {
		t.Fatal(err)
	}
	gp.pollUntil(t, "partition 1 from the new commit", func() bool { return len(gp.offsets(1)) >= 2 })
	if got := gp.offsets(1); !slices.Equal(got, []int64{1, 2}) || len(gp.errs) != 1 {
		t.Fatalf("partition 1 offsets %v, errors %v; want 1, 2 and no new error", got, gp.errs)
	}
}

// Auto-commit commits what was polled without a manual commit; Close
// commits the rest and leaves at once, so the remaining member gets the
// partitions without waiting out the leaver's (long) session timeout, and
// starts them where the leaver stopped.
func TestGroupAutoCommitAndCloseLeaves(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "auto", 4, nil)
	for p := int32(0); p < 4; p++ {
		produceTo(t, b.Addr, "auto", p, "v", 0, 10)
	}
	first := newGroupPoller(t, b.Addr, "gauto", "auto", client.AutoCommitInterval(100*time.Millisecond),
		client.SessionTimeout(30*time.Second), client.HeartbeatInterval(100*time.Millisecond))
	first.pollUntil(t, "every record", func() bool { return len(first.recs) == 40 })
	waitFor(t, "auto-commit of every partition", func() bool {
		c := committedOffsets(t, a, "gauto")
		return len(c) == 4 && c[0] == 10 && c[1] == 10 && c[2] == 10 && c[3] == 10
	})

	// A second member, which would be evicted only after four minutes,
	// and which commits only on Close.
	second := newGroupPoller(t, b.Addr, "gauto", "auto", client.AutoCommitInterval(time.Hour),
		client.SessionTimeout(4*time.Minute), client.HeartbeatInterval(100*time.Millisecond))
	waitFor(t, "the partitions split between the two", func() bool {
		x, y := first.last(), second.last()
		return x.generation == y.generation && len(x.partitions) == 2 && len(y.partitions) == 2 &&
			!slices.ContainsFunc(x.partitions, func(p int32) bool { return slices.Contains(y.partitions, p) })
	})
	theirs := second.last().partitions
	for p := int32(0); p < 4; p++ {
		produceTo(t, b.Addr, "auto", p, "w", 10, 5)
	}
	second.pollUntil(t, "the new records of its partitions", func() bool { return len(second.recs) == 10 })
	for _, p := range theirs {
		if got := second.offsets(p); !slices.Equal(got, []int64{10, 11, 12, 13, 14}) {
			t.Fatalf("second member read partition %d offsets %v, want 10-14 (from the first's commits)", p, got)
		}
	}
	member := second.c.MemberID()
	if err := second.c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close has returned: the member is gone and its positions committed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := a.DescribeGroup(ctx, "gauto")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Members {
		if m.MemberId == member {
			t.Fatalf("member %s still in the group after Close: %v", member, info.Members)
		}
	}
	committed := committedOffsets(t, a, "gauto")
	for _, p := range theirs {
		if committed[p] != 15 {
			t.Fatalf("partition %d committed %d after Close, want 15", p, committed[p])
		}
	}
	waitFor(t, "the first member owning every partition", func() bool { return len(first.last().partitions) == 4 })
	for p := int32(0); p < 4; p++ {
		produceTo(t, b.Addr, "auto", p, "x", 15, 1)
	}
	first.recs = nil
	first.pollUntil(t, "offset 15 of every partition", func() bool {
		for p := int32(0); p < 4; p++ {
			if !slices.Contains(first.offsets(p), 15) {
				return false
			}
		}
		return true
	})
	for _, p := range theirs {
		if got := first.offsets(p); !slices.Equal(got, []int64{15}) {
			t.Fatalf("first member read partition %d offsets %v after the second left, want only 15", p, got)
		}
	}
}
