package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// groupState is a group description reduced to what tests compare.
type groupState struct {
	coordinator int32
	members     []string
	committed   map[int32]int64 // -1: none
	end         map[int32]int64 // the HW
}

// describeGroup describes group, or returns nil unless the description
// lists exactly `partitions` partitions (one that could not read the topic
// lists none, and would make every check over them vacuous).
func describeGroup(a *client.Admin, group string, partitions int) *groupState {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := a.DescribeGroup(ctx, group)
	if err != nil || len(info.Partitions) != partitions {
		return nil
	}
	s := &groupState{coordinator: info.Coordinator, committed: map[int32]int64{}, end: map[int32]int64{}}
	for _, m := range info.Members {
		s.members = append(s.members, m.MemberId)
	}
	for _, p := range info.Partitions {
		s.committed[p.Partition], s.end[p.Partition] = p.Committed, p.End
	}
	return s
}

// allCommittedAbove reports whether every partition's commit is above prev's
// (0 for partitions prev lacks).
func (s *groupState) allCommittedAbove(prev map[int32]int64) bool {
	for p, off := range s.committed {
		if off <= prev[p] {
			return false
		}
	}
	return true
}

// coded is every group response.
type coded interface{ GetError() messages.ErrorCode }

// The group protocol's errors at the wire, on a 3-broker cluster: brokers
// other than the group's coordinator answer NOT_COORDINATOR; on the
// coordinator, a member learns of a rebalance from REBALANCE_IN_PROGRESS,
// an unknown or departed member gets UNKNOWN_MEMBER_ID, a stale generation
// ILLEGAL_GENERATION.
func TestGroupProtocolErrors(t *testing.T) {
	c := startCluster(t, 3, "--group-initial-rebalance-delay", "100ms", "--offsets-partitions", "4")
	c.createTopic("proto", 4, 3, nil)
	a, err := client.NewAdmin(c.seeds(), client.RequestTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	coord, err := a.FindCoordinator(ctx, "gp")
	if err != nil {
		t.Fatal(err)
	}
	// ask sends req to addr, again while the coordinator is still loading.
	ask := func(addr string, req proto.Message) proto.Message {
		t.Helper()
		var res proto.Message
		c.waitFor("an answer other than COORDINATOR_NOT_AVAILABLE", time.Minute, func() bool {
			r, err := a.Request(ctx, addr, req)
			if err != nil {
				t.Fatalf("%T to %s: %v", req, addr, err)
			}
			res = r
			return r.(coded).GetError() != messages.ErrorCode_COORDINATOR_NOT_AVAILABLE
		})
		return res
	}
	expect := func(what string, res proto.Message, want messages.ErrorCode) {
		t.Helper()
		if got := res.(coded).GetError(); got != want {
			t.Fatalf("%s: %v (%v), want %v", what, got, res, want)
		}
	}
	joinReq := func(member, clientID string) *messages.JoinGroupRequest {
		return &messages.JoinGroupRequest{Group: "gp", MemberId: member, ClientId: clientID, SessionTimeoutMs: 30000,
			RebalanceTimeoutMs: 30000, Topics: []string{"proto"}, Assignors: []string{"range"}}
	}
	others := 0
	for _, id := range c.ids() {
		if addr := c.brokers[id].Addr; addr != coord {
			others++
			expect("JoinGroup to another broker", ask(addr, joinReq("", "x")), messages.ErrorCode_NOT_COORDINATOR)
			expect("OffsetFetch to another broker", ask(addr, &messages.OffsetFetchRequest{Group: "gp"}), messages.ErrorCode_NOT_COORDINATOR)
			expect("Heartbeat to another broker", ask(addr, &messages.HeartbeatRequest{Group: "gp", MemberId: "x", Generation: 1}), messages.ErrorCode_NOT_COORDINATOR)
		}
	}
	if others != 2 {
		t.Fatalf("coordinator %s is not one of the brokers %s", coord, c.seeds())
	}

	ja := ask(coord, joinReq("", "a")).(*messages.JoinGroupResponse)
	expect("first join", ja, messages.ErrorCode_NONE)
	sa := ask(coord, &messages.SyncGroupRequest{Group: "gp", MemberId: ja.MemberId, Generation: ja.Generation}).(*messages.SyncGroupResponse)
	expect("first sync", sa, messages.ErrorCode_NONE)
	// b joins: its join is parked until a rejoins.
	type joined struct {
		res proto.Message
		err error
	}
	jbDone := make(chan joined, 1)
	go func() {
		res, err := a.Request(ctx, coord, joinReq("", "b"))
		jbDone <- joined{res, err}
	}()
	c.waitFor("a's heartbeat reporting the rebalance", time.Minute, func() bool {
		hb := ask(coord, &messages.HeartbeatRequest{Group: "gp", MemberId: ja.MemberId, Generation: ja.Generation})
		if code := hb.(coded).GetError(); code != messages.ErrorCode_NONE && code != messages.ErrorCode_REBALANCE_IN_PROGRESS {
			t.Fatalf("a's heartbeat: %v", hb)
		}
		return hb.(coded).GetError() == messages.ErrorCode_REBALANCE_IN_PROGRESS
	})
	expect("a's sync during the rebalance", ask(coord, &messages.SyncGroupRequest{Group: "gp", MemberId: ja.MemberId, Generation: ja.Generation}),
		messages.ErrorCode_REBALANCE_IN_PROGRESS)
	expect("an unknown member's heartbeat", ask(coord, &messages.HeartbeatRequest{Group: "gp", MemberId: "ghost", Generation: ja.Generation}),
		messages.ErrorCode_UNKNOWN_MEMBER_ID)
	expect("an unknown member's commit", ask(coord, &messages.OffsetCommitRequest{Group: "gp", MemberId: "ghost", Generation: ja.Generation,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "proto", Partition: 0, Offset: 1}}}), messages.ErrorCode_UNKNOWN_MEMBER_ID)
	expect("an unknown member's join", ask(coord, joinReq("ghost", "g")), messages.ErrorCode_UNKNOWN_MEMBER_ID)

	ja2 := ask(coord, joinReq(ja.MemberId, "a")).(*messages.JoinGroupResponse)
	expect("a's rejoin", ja2, messages.ErrorCode_NONE)
	jb := <-jbDone
	if jb.err != nil {
		t.Fatal(jb.err)
	}
	expect("b's join", jb.res, messages.ErrorCode_NONE)
	if b := jb.res.(*messages.JoinGroupResponse); b.Generation != ja2.Generation || ja2.Generation <= ja.Generation {
		t.Fatalf("generations: a %d then %d, b %d", ja.Generation, ja2.Generation, b.Generation)
	}
	expect("a heartbeat of the previous generation", ask(coord, &messages.HeartbeatRequest{Group: "gp", MemberId: ja.MemberId, Generation: ja.Generation}),
		messages.ErrorCode_ILLEGAL_GENERATION)
	expect("a's leave", ask(coord, &messages.LeaveGroupRequest{Group: "gp", MemberId: ja.MemberId}), messages.ErrorCode_NONE)
	expect("a departed member's heartbeat", ask(coord, &messages.HeartbeatRequest{Group: "gp", MemberId: ja.MemberId, Generation: ja2.Generation}),
		messages.ErrorCode_UNKNOWN_MEMBER_ID)
	expect("a departed member's commit", ask(coord, &messages.OffsetCommitRequest{Group: "gp", MemberId: ja.MemberId, Generation: ja2.Generation,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "proto", Partition: 0, Offset: 1}}}), messages.ErrorCode_UNKNOWN_MEMBER_ID)
}

// A push subscriber's credit survives a coordinator failover: the new
// coordinator's pusher starts from the acknowledged offsets with the credit
// the subscriber registered (not the default), so no pusher ever has more
// than that credit outstanding, and no record is lost.
func TestPushCreditAcrossCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, "--group-initial-rebalance-delay", "100ms", "--offsets-partitions", "4")
	c.createTopic("credits", 3, 3, nil)
	const n, credit = 1500, 5
	sent := produceValues(t, c.seeds(), "credits", "v", n)
	s := newPushSubscriber(credit, 2*time.Millisecond)
	spawnSubscriber(t, s, c.seeds(), "gcf", []string{"credits"})
	var before *groupState
	c.waitFor("records processed and acknowledged", time.Minute, func() bool {
		before = describeGroup(c.admin, "gcf", 3)
		if before == nil || len(s.processed()) < 100 {
			return false
		}
		for _, off := range before.committed {
			if off > 0 {
				return true
			}
		}
		return false
	})
	c.brokers[before.coordinator].kill9()
	// Long enough for a pusher started with the default credit to show.
	c.waitFor("a new pusher pushing", time.Minute, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.pushers) > 1 && s.received[s.pushers[len(s.pushers)-1]] >= 10*credit
	})
	c.waitFor("every record processed", 2*time.Minute, func() bool { return missingValues(sent, s) == 0 })
	s.checkCredit(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("coordinator %d killed; records per pusher %v, at most %d held at once from one (credit %d)",
		before.coordinator, s.received, s.maxHeld, credit)
}
