package broker

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// askUntil repeats a group request while the coordinator is not ready.
func (tb *testBroker) askGroup(msg any, code func(any) messages.ErrorCode) any {
	tb.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := tb.system.Root.RequestFuture(tb.pid, msg, 10*time.Second).Result()
		if err != nil {
			tb.t.Fatalf("request %T: %v", msg, err)
		}
		c := code(res)
		if (c != messages.ErrorCode_COORDINATOR_NOT_AVAILABLE && c != messages.ErrorCode_NOT_COORDINATOR) || time.Now().After(deadline) {
			return res
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// makeOffsetsTopic has the broker make __consumer_offsets (a
// FindCoordinator does) and waits until it answers for a group.
func (tb *testBroker) makeOffsetsTopic() {
	tb.t.Helper()
	tb.askGroup(&messages.FindCoordinatorRequest{Group: "g"}, func(r any) messages.ErrorCode {
		return r.(*messages.FindCoordinatorResponse).Error
	})
}

func TestGroupMembershipAndOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, dir, func(c *actors.BrokerConfig) {
		c.OffsetsPartitions = 4
		c.GroupInitialRebalanceDelay = 200 * time.Millisecond
	})
	tb.createTopic("events", 6, nil)
	fc := tb.askGroup(&messages.FindCoordinatorRequest{Group: "g1"}, func(r any) messages.ErrorCode {
		return r.(*messages.FindCoordinatorResponse).Error
	}).(*messages.FindCoordinatorResponse)
	if fc.Error != messages.ErrorCode_NONE || fc.BrokerId != 0 {
		t.Fatalf("find coordinator: %v", fc)
	}
	join := func() *actor.Future {
		return tb.system.Root.RequestFuture(tb.pid, &messages.JoinGroupRequest{Group: "g1", ClientId: "c",
			SessionTimeoutMs: 10000, RebalanceTimeoutMs: 5000, Topics: []string{"events"}, Assignors: []string{"range"}}, 15*time.Second)
	}
	// Wait for the coordinator, then two members join at once.
	tb.askGroup(&messages.DescribeGroupRequest{Group: "g1"}, func(r any) messages.ErrorCode { return r.(*messages.DescribeGroupResponse).Error })
	f1, f2 := join(), join()
	var members []*messages.JoinGroupResponse
	for _, f := range []*actor.Future{f1, f2} {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		r := res.(*messages.JoinGroupResponse)
		if r.Error != messages.ErrorCode_NONE || r.Generation != 1 {
			t.Fatalf("join: %v", r)
		}
		members = append(members, r)
	}
	owned := map[int32]string{}
	for _, m := range members {
		s := tb.ask(&messages.SyncGroupRequest{Group: "g1", MemberId: m.MemberId, Generation: m.Generation}).(*messages.SyncGroupResponse)
		if s.Error != messages.ErrorCode_NONE || len(s.Assignment) != 1 || len(s.Assignment[0].Partitions) != 3 {
			t.Fatalf("sync: %v", s)
		}
		for _, p := range s.Assignment[0].Partitions {
			if prev, dup := owned[p]; dup {
				t.Fatalf("partition %d owned by %s and %s", p, prev, m.MemberId)
			}
			owned[p] = m.MemberId
		}
	}
	if len(owned) != 6 {
		t.Fatalf("%d partitions owned", len(owned))
	}
	m := members[0]
	commit := tb.ask(&messages.OffsetCommitRequest{Group: "g1", MemberId: m.MemberId, Generation: m.Generation,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "events", Partition: 2, Offset: 42}}}).(*messages.OffsetCommitResponse)
	if commit.Error != messages.ErrorCode_NONE {
		t.Fatalf("commit: %v", commit)
	}
	stale := tb.ask(&messages.OffsetCommitRequest{Group: "g1", MemberId: m.MemberId, Generation: m.Generation - 1,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "events", Partition: 2, Offset: 7}}}).(*messages.OffsetCommitResponse)
	if stale.Error != messages.ErrorCode_ILLEGAL_GENERATION {
		t.Fatalf("commit from a stale generation: %v", stale.Error)
	}
	tb.stop()

	tb2 := startTestBroker(t, dir, func(c *actors.BrokerConfig) { c.OffsetsPartitions = 4 })
	fetched := tb2.askGroup(&messages.OffsetFetchRequest{Group: "g1"}, func(r any) messages.ErrorCode {
		return r.(*messages.OffsetFetchResponse).Error
	}).(*messages.OffsetFetchResponse)
	if len(fetched.Offsets) != 1 || fetched.Offsets[0].Offset != 42 {
		t.Fatalf("offsets after restart: %v", fetched)
	}
	desc := tb2.ask(&messages.DescribeGroupRequest{Group: "g1"}).(*messages.DescribeGroupResponse)
	var ids []string
	for _, mem := range desc.Members {
		ids = append(ids, mem.MemberId)
	}
	if desc.Generation != 1 || !slices.Contains(ids, m.MemberId) {
		t.Fatalf("group after restart: %v", desc)
	}
	// A restored member keeps heartbeating in its generation.
	hb := tb2.ask(&messages.HeartbeatRequest{Group: "g1", MemberId: m.MemberId, Generation: m.Generation}).(*messages.HeartbeatResponse)
	if hb.Error != messages.ErrorCode_NONE {
		t.Fatalf("heartbeat after restart: %v", hb)
	}
}

// Commit metadata is bounded as in Kafka (offset.metadata.max.bytes): a
// commit carrying more is refused and writes nothing.
func TestCommitMetadataTooLarge(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) { c.OffsetsPartitions = 1 })
	tb.createTopic("events", 1, nil)
	tb.makeOffsetsTopic()
	commitCode := func(r any) messages.ErrorCode { return r.(*messages.OffsetCommitResponse).Error }
	commit := func(metadata string) *messages.OffsetCommitResponse {
		return tb.askGroup(&messages.OffsetCommitRequest{Group: "g", Generation: -1, Offsets: []*messages.OffsetCommitEntry{
			{Topic: "events", Partition: 0, Offset: 5, Metadata: metadata}}}, commitCode).(*messages.OffsetCommitResponse)
	}
	if r := commit(string(make([]byte, actors.OffsetMetadataMaxBytes))); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("metadata at the limit: %v %s", r.Error, r.ErrorMessage)
	}
	if r := commit(string(make([]byte, actors.OffsetMetadataMaxBytes+1)) + "x"); r.Error != messages.ErrorCode_OFFSET_METADATA_TOO_LARGE {
		t.Fatalf("metadata over the limit: %v %s", r.Error, r.ErrorMessage)
	}
	fetched := tb.askGroup(&messages.OffsetFetchRequest{Group: "g"}, func(r any) messages.ErrorCode {
		return r.(*messages.OffsetFetchResponse).Error
	}).(*messages.OffsetFetchResponse)
	if len(fetched.Offsets) != 1 || len(fetched.Offsets[0].Metadata) != actors.OffsetMetadataMaxBytes {
		t.Fatalf("committed offsets after the refusal: %d entries", len(fetched.Offsets))
	}
}

// What group members' joins carry counts in the broker's group metadata
// budget (a quarter of it per principal): a join beyond is refused with
// GROUP_MAX_SIZE_REACHED, and a member that leaves gives its share back.
func TestGroupMetadataBudget(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.OffsetsPartitions = 1
		c.GroupMetadataMaxBytes = 4 << 20                     // 1 MiB for one principal
		c.GroupInitialRebalanceDelay = 300 * time.Millisecond // the three join one generation
	})
	tb.createTopic("events", 1, nil)
	tb.makeOffsetsTopic()
	tb.askGroup(&messages.DescribeGroupRequest{Group: "g"}, func(r any) messages.ErrorCode { return r.(*messages.DescribeGroupResponse).Error })
	// 300 KiB of topic names a join (topics that do not exist yet).
	var topics []string
	for i := range 300 {
		topics = append(topics, fmt.Sprintf("%01020d", i))
	}
	join := func(memberID string) *actor.Future {
		return tb.system.Root.RequestFuture(tb.pid, &messages.JoinGroupRequest{Group: "g", ClientId: "c", MemberId: memberID,
			SessionTimeoutMs: 10000, RebalanceTimeoutMs: 1000, Topics: topics, Assignors: []string{"range"}}, 15*time.Second)
	}
	var accepted []*actor.Future
	for range 3 {
		accepted = append(accepted, join(""))
	}
	res, err := join("").Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.JoinGroupResponse); r.Error != messages.ErrorCode_GROUP_MAX_SIZE_REACHED {
		t.Fatalf("a fourth join of 300 KiB with 1 MiB for the principal: %v %s", r.Error, r.ErrorMessage)
	}
	var first *messages.JoinGroupResponse
	for _, f := range accepted {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		if r := res.(*messages.JoinGroupResponse); r.Error != messages.ErrorCode_NONE {
			t.Fatalf("an accepted join: %v %s", r.Error, r.ErrorMessage)
		} else if first == nil {
			first = r
		}
	}
	leave := tb.ask(&messages.LeaveGroupRequest{Group: "g", MemberId: first.MemberId}).(*messages.LeaveGroupResponse)
	if leave.Error != messages.ErrorCode_NONE {
		t.Fatalf("leave: %v", leave.Error)
	}
	// The leave starts a rebalance; the new member's join is answered when
	// it ends (the other two, which do not rejoin, are dropped after 1 s).
	res, err = join("").Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.JoinGroupResponse); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("a join after a member left: %v %s", r.Error, r.ErrorMessage)
	}
}

// Groups written in the protobuf record format of earlier releases are
// read on load and written again in Kafka's format, once: their offsets
// and members survive, and Kafka's tools find them in __consumer_offsets.
func TestLegacyGroupRecordsAreMigrated(t *testing.T) {
	dir := t.TempDir()
	tweak := func(c *actors.BrokerConfig) { c.OffsetsPartitions = 2 }
	tb := startTestBroker(t, dir, tweak)
	tb.createTopic("events", 1, nil)
	// The offsets topic exists once a group asks for its coordinator.
	tb.askGroup(&messages.FindCoordinatorRequest{Group: "old"}, func(r any) messages.ErrorCode {
		return r.(*messages.FindCoordinatorResponse).Error
	})
	part := actors.GroupPartition("old", 2)
	marshal := func(m proto.Message) []byte { b, _ := proto.Marshal(m); return b }
	var b record.Builder
	b.Reset(record.NoProducer)
	b.Append(1, marshal(&messages.GroupRecordKey{Group: "old", Topic: "events", Partition: 0}), marshal(&messages.OffsetValue{Offset: 17, Metadata: "m"}), nil)
	b.Append(1, marshal(&messages.GroupRecordKey{Group: "old"}), marshal(&messages.GroupMetadataValue{Generation: 4, Assignor: "range"}), nil)
	produced := tb.ask(&messages.ProduceRequest{Topic: actors.OffsetsTopic, Partition: part, Acks: -1, TimeoutMs: 5000,
		Records: append([]byte(nil), b.Finish()...)}).(*messages.ProduceResponse)
	if produced.Error != messages.ErrorCode_NONE {
		t.Fatalf("writing legacy records: %v", produced)
	}
	tb.stop()

	// kafkaRecords counts the records of the group's partition in Kafka's
	// format (a key whose first byte is not protobuf's 0x0a).
	kafkaRecords := func(tb *testBroker) int {
		fetched := tb.ask(&messages.FetchRequest{Topic: actors.OffsetsTopic, Partition: part, MaxBytes: 1 << 20,
			CurrentLeaderEpoch: -1, Isolation: actors.IsolationLogEnd}).(*messages.FetchResponse)
		n := 0
		for _, batch := range fetched.Batches {
			it := record.Records(batch)
			for {
				r, ok, err := it.Next()
				if err != nil || !ok {
					break
				}
				if len(r.Key) > 0 && r.Key[0] != 0x0a {
					n++
				}
			}
		}
		return n
	}
	for restart := range 2 {
		tb2 := startTestBroker(t, dir, tweak)
		fetched := tb2.askGroup(&messages.OffsetFetchRequest{Group: "old"}, func(r any) messages.ErrorCode {
			return r.(*messages.OffsetFetchResponse).Error
		}).(*messages.OffsetFetchResponse)
		if len(fetched.Offsets) != 1 || fetched.Offsets[0].Offset != 17 || fetched.Offsets[0].Metadata != "m" {
			t.Fatalf("restart %d: offsets %v", restart, fetched)
		}
		deadline := time.Now().Add(10 * time.Second)
		for kafkaRecords(tb2) < 2 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := kafkaRecords(tb2); n != 2 {
			t.Fatalf("restart %d: %d records in Kafka's format, want the offset and the metadata once", restart, n)
		}
		tb2.stop()
	}
}

// Asking about groups that do not exist leaves nothing behind: each
// request starts the group's coordinator, which stops again once it holds
// nothing (no members, none waiting to join, no offsets, no generation),
// so a peer naming a million group ids does not make a million actors and
// their tickers. A group with something to keep stays.
func TestCoordinatorsOfEmptyGroupsStop(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) { c.OffsetsPartitions = 4 })
	tb.createTopic("events", 1, nil)
	describe := func(group string) *messages.DescribeGroupResponse {
		return tb.askGroup(&messages.DescribeGroupRequest{Group: group}, func(r any) messages.ErrorCode { return r.(*messages.DescribeGroupResponse).Error }).(*messages.DescribeGroupResponse)
	}
	tb.makeOffsetsTopic()
	for i := range 40 { // every offsets partition coordinates
		describe(fmt.Sprintf("warm-up-%d", i))
	}
	time.Sleep(200 * time.Millisecond) // the warm-ups' coordinators stop
	before := runtime.NumGoroutine()
	const groups = 2000
	for i := range groups {
		r := describe(fmt.Sprintf("nobody-%d", i))
		if r.Error != messages.ErrorCode_NONE || r.State != "Dead" {
			t.Fatalf("describe: %v %s", r.Error, r.State)
		}
	}
	// One group with a commit keeps its coordinator.
	commit := tb.ask(&messages.OffsetCommitRequest{Group: "kept", Generation: -1,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "events", Partition: 0, Offset: 7}}}).(*messages.OffsetCommitResponse)
	if commit.Error != messages.ErrorCode_NONE {
		t.Fatalf("commit: %v %s", commit.Error, commit.ErrorMessage)
	}
	goroutinesBackTo(t, before+groups/10, fmt.Sprintf("describing %d groups that do not exist", groups))
	fetched := tb.ask(&messages.OffsetFetchRequest{Group: "kept"}).(*messages.OffsetFetchResponse)
	if len(fetched.Offsets) != 1 || fetched.Offsets[0].Offset != 7 {
		t.Fatalf("the group with a commit: %v", fetched.Offsets)
	}
}

// Every member counts in the group metadata budget for what it costs
// beside its subscription, so a principal cannot hold unbounded members
// by subscribing to a one-letter topic in group after group: with 1 MiB
// for the principal, about a thousand members fit, then joins are refused
// with GROUP_MAX_SIZE_REACHED (of both protocols).
func TestEveryMemberCountsInTheBudget(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.OffsetsPartitions = 1
		c.GroupMetadataMaxBytes = 4 << 20 // 1 MiB for one principal
	})
	tb.createTopic("e", 1, nil)
	tb.makeOffsetsTopic()
	joined := tb.joinUntilRefused(2000, func(i int) *messages.ConsumerGroupHeartbeatRequest {
		return &messages.ConsumerGroupHeartbeatRequest{Group: fmt.Sprintf("g%d", i), MemberId: "m",
			RebalanceTimeoutMs: 60000, Topics: []string{"e"}, TopicsSet: true, OwnedSet: true}
	})
	if joined < 500 || joined >= 2000 {
		t.Fatalf("%d one-member groups joined with 1 MiB for the principal", joined)
	}
	join := tb.ask(&messages.JoinGroupRequest{Group: "classic", ClientId: "c", SessionTimeoutMs: 10000,
		RebalanceTimeoutMs: 1000, Topics: []string{"e"}, Assignors: []string{"range"}}).(*messages.JoinGroupResponse)
	if join.Error != messages.ErrorCode_GROUP_MAX_SIZE_REACHED {
		t.Fatalf("a classic join over the budget: %v", join.Error)
	}
	sub := tb.ask(&messages.SubscribeRequest{Group: "pushed", Topics: []string{"e"}, TargetAddress: "127.0.0.1:1",
		TargetId: "nobody"}).(*messages.SubscribeResponse)
	if sub.Error != messages.ErrorCode_GROUP_MAX_SIZE_REACHED {
		t.Fatalf("a push subscription over the budget: %v", sub.Error)
	}
	t.Logf("%d one-member groups joined before the budget refused", joined)
}

// A group without members does not tick: its coordinator keeps its state
// (generation, offsets) but runs no timer, so the groups a cluster has
// seen cost no CPU or goroutine while nobody is in them.
func TestGroupsWithoutMembersDoNotTick(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) { c.OffsetsPartitions = 1 })
	tb.createTopic("e", 1, nil)
	tb.makeOffsetsTopic()
	beat := func(group string, epoch int32) *messages.ConsumerGroupHeartbeatResponse {
		return tb.askGroup(&messages.ConsumerGroupHeartbeatRequest{Group: group, MemberId: "m", MemberEpoch: epoch,
			RebalanceTimeoutMs: 60000, Topics: []string{"e"}, TopicsSet: true, OwnedSet: true},
			func(r any) messages.ErrorCode { return r.(*messages.ConsumerGroupHeartbeatResponse).Error }).(*messages.ConsumerGroupHeartbeatResponse)
	}
	beat("warm-up", 0)
	beat("warm-up", -1)
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()
	const groups = 500
	for i := range groups {
		group := fmt.Sprintf("seen-%d", i)
		if r := beat(group, 0); r.Error != messages.ErrorCode_NONE || r.MemberEpoch != 1 {
			t.Fatalf("join: %v %s", r.Error, r.ErrorMessage)
		}
		if r := beat(group, -1); r.Error != messages.ErrorCode_NONE {
			t.Fatalf("leave: %v %s", r.Error, r.ErrorMessage)
		}
	}
	goroutinesBackTo(t, before+groups/10, fmt.Sprintf("%d groups were joined and left", groups))
	// They are groups still: their epochs went on, and a member joining
	// one finds it where it was.
	if r := beat("seen-7", 0); r.Error != messages.ErrorCode_NONE || r.MemberEpoch != 3 {
		t.Fatalf("a member joining a group seen before: %v epoch %d, want 3", r.Error, r.MemberEpoch)
	}
}

// goroutinesBackTo waits up to 20 s for the process's goroutines to be at
// most most, failing the test with what happened before if they are not.
func goroutinesBackTo(t *testing.T, most int, after string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for n := runtime.NumGoroutine(); n > most; n = runtime.NumGoroutine() {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after %s, want at most %d", n, after, most)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An offset fetch that names a member of a consumer group (Kafka's
// OffsetFetch v9) is answered only at the member's epoch, as Kafka does:
// a member whose assignment moved on learns it before reading offsets
// for partitions it may no longer own. Fetches naming no member (admin
// tools) and fetches in classic groups are not checked.
func TestOffsetFetchChecksTheMemberEpoch(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) { c.OffsetsPartitions = 1 })
	tb.createTopic("e", 2, nil)
	tb.makeOffsetsTopic()
	beat := func(member string, epoch int32) *messages.ConsumerGroupHeartbeatResponse {
		return tb.askGroup(&messages.ConsumerGroupHeartbeatRequest{Group: "g", MemberId: member, MemberEpoch: epoch,
			RebalanceTimeoutMs: 60000, Topics: []string{"e"}, TopicsSet: true, OwnedSet: true},
			func(r any) messages.ErrorCode { return r.(*messages.ConsumerGroupHeartbeatResponse).Error }).(*messages.ConsumerGroupHeartbeatResponse)
	}
	fetch := func(group, member string, epoch int32, named bool) *messages.OffsetFetchResponse {
		return tb.ask(&messages.OffsetFetchRequest{Group: group, MemberId: member, MemberEpoch: epoch, MemberSet: named,
			Partitions: []*messages.TopicPartitions{{Topic: "e", Partitions: []int32{0}}}}).(*messages.OffsetFetchResponse)
	}
	a := beat("a", 0)
	if a.Error != messages.ErrorCode_NONE || a.MemberEpoch != 1 {
		t.Fatalf("join: %v %s epoch %d", a.Error, a.ErrorMessage, a.MemberEpoch)
	}
	if r := fetch("g", "a", 1, true); r.Error != messages.ErrorCode_NONE || len(r.Offsets) != 1 || r.Offsets[0].Offset != -1 {
		t.Fatalf("a fetch at the member's epoch: %v %s %v", r.Error, r.ErrorMessage, r.Offsets)
	}
	// A second member moves the group on; a's epoch follows once it has
	// revoked what b is to get, and a fetch at its old epoch is stale.
	if b := beat("b", 0); b.Error != messages.ErrorCode_NONE || b.MemberEpoch != 2 {
		t.Fatalf("second join: %v epoch %d", b.Error, b.MemberEpoch)
	}
	a = beat("a", 1) // revokes a partition at epoch 1
	a = beat("a", 1) // owns nothing now: a moves on
	if a.MemberEpoch == 1 {
		t.Fatalf("a stayed at epoch 1 after b joined: %v", a)
	}
	for _, c := range []struct {
		member string
		epoch  int32
		want   messages.ErrorCode
	}{
		{"a", 1, messages.ErrorCode_STALE_MEMBER_EPOCH},
		{"a", a.MemberEpoch + 1, messages.ErrorCode_STALE_MEMBER_EPOCH},
		{"a", a.MemberEpoch, messages.ErrorCode_NONE},
		{"nobody", a.MemberEpoch, messages.ErrorCode_UNKNOWN_MEMBER_ID},
		{"", -1, messages.ErrorCode_UNKNOWN_MEMBER_ID}, // named, but empty
	} {
		if r := fetch("g", c.member, c.epoch, true); r.Error != c.want {
			t.Errorf("fetch by %q at epoch %d: %v (%s), want %v", c.member, c.epoch, r.Error, r.ErrorMessage, c.want)
		}
	}
	if r := fetch("g", "", -1, false); r.Error != messages.ErrorCode_NONE || len(r.Offsets) != 1 {
		t.Errorf("a fetch naming no member: %v %s", r.Error, r.ErrorMessage)
	}
	// A classic group is not checked (Kafka checks only consumer groups).
	join := tb.ask(&messages.JoinGroupRequest{Group: "classic", ClientId: "c", SessionTimeoutMs: 10000,
		RebalanceTimeoutMs: 1000, Topics: []string{"e"}, Assignors: []string{"range"}}).(*messages.JoinGroupResponse)
	if join.Error != messages.ErrorCode_NONE {
		t.Fatalf("classic join: %v %s", join.Error, join.ErrorMessage)
	}
	if r := fetch("classic", "someone", 99, true); r.Error != messages.ErrorCode_NONE {
		t.Errorf("a fetch in a classic group: %v %s", r.Error, r.ErrorMessage)
	}
	// Once its members left, the group is an empty consumer group: a fetch
	// naming a member finds none; a group never seen has nothing to check.
	beat("a", -1)
	beat("b", -1)
	if r := fetch("g", "a", a.MemberEpoch, true); r.Error != messages.ErrorCode_UNKNOWN_MEMBER_ID {
		t.Errorf("a fetch by a member that left: %v %s", r.Error, r.ErrorMessage)
	}
	if r := fetch("never", "a", 1, true); r.Error != messages.ErrorCode_NONE || len(r.Offsets) != 1 || r.Offsets[0].Offset != -1 {
		t.Errorf("a fetch in a group never seen: %v %s %v", r.Error, r.ErrorMessage, r.Offsets)
	}
}

// A regular expression costs the broker what it compiles to, which can be
// far more than its text ("[a-z]{1000}": 19 bytes, some 40 KiB compiled),
// and the list of topics it matches: both count in the group metadata
// budget, so members subscribing with distinct expressions cannot hold
// more of the broker's memory than a principal's share (here 1 MiB).
func TestRegexesCountInTheBudget(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.OffsetsPartitions = 1
		c.GroupMetadataMaxBytes = 4 << 20 // 1 MiB for one principal
	})
	tb.createTopic("e", 1, nil)
	tb.makeOffsetsTopic()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	joined := tb.joinUntilRefused(1000, func(i int) *messages.ConsumerGroupHeartbeatRequest {
		return &messages.ConsumerGroupHeartbeatRequest{Group: fmt.Sprintf("re%d", i%50), MemberId: fmt.Sprintf("m%d", i),
			RebalanceTimeoutMs: 60000, Regex: fmt.Sprintf("[a-z]{1000}%d", i), RegexSet: true, OwnedSet: true}
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d members joined with distinct expressions; the heap grew by %d KiB", joined, grew>>10)
	// Each expression takes some 41 KiB compiled: 1 MiB holds 25. (Counted
	// by their text, 1,000 joined and the heap grew by 47 MiB.)
	if joined == 0 || joined > 25 {
		t.Errorf("%d members joined with distinct expressions of 41 KiB each on a 1 MiB share", joined)
	}
	if grew > 16<<20 {
		t.Errorf("the heap grew by %d KiB", grew>>10)
	}
}

// joinUntilRefused has up to n consumer-protocol members join (join(i) is
// the i-th's first heartbeat) until the group metadata budget refuses
// one, and returns how many joined.
func (tb *testBroker) joinUntilRefused(n int, join func(i int) *messages.ConsumerGroupHeartbeatRequest) int {
	tb.t.Helper()
	for i := range n {
		r := tb.askGroup(join(i), func(r any) messages.ErrorCode {
			return r.(*messages.ConsumerGroupHeartbeatResponse).Error
		}).(*messages.ConsumerGroupHeartbeatResponse)
		if r.Error == messages.ErrorCode_GROUP_MAX_SIZE_REACHED {
			return i
		}
		if r.Error != messages.ErrorCode_NONE {
			tb.t.Fatalf("join %d: %v %s", i, r.Error, r.ErrorMessage)
		}
	}
	return n
}
