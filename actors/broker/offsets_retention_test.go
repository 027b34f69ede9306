package broker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
)

// A committed offset is acknowledged: retention of __consumer_offsets must
// not take it while it is the latest of a group in use, however long ago
// it was committed and however busy other groups keep the partition. Here
// the partition's retention (--offsets-retention) is 1.5 s and a busy
// group rolls its segments; a group whose member committed once keeps its
// offset across restarts of the broker (its coordinator reloads the
// partition from what retention left). Without the groups written again
// within the retention, its offset was gone.
func TestCommittedOffsetsOutliveRetention(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, dir, offsetsRetentionTweak)
	tb.createTopic("events", 1, nil)
	tb.makeOffsetsTopic()
	// A member of Kafka's consumer protocol, whose session (45 s)
	// outlasts the test, commits once.
	beat := tb.askGroup(&messages.ConsumerGroupHeartbeatRequest{Group: "keep", MemberId: "m", RebalanceTimeoutMs: 60000,
		Topics: []string{"events"}, TopicsSet: true, OwnedSet: true},
		func(r any) messages.ErrorCode { return r.(*messages.ConsumerGroupHeartbeatResponse).Error }).(*messages.ConsumerGroupHeartbeatResponse)
	if beat.Error != messages.ErrorCode_NONE {
		t.Fatalf("join: %v %s", beat.Error, beat.ErrorMessage)
	}
	r := tb.ask(&messages.OffsetCommitRequest{Group: "keep", MemberId: "m", Generation: beat.MemberEpoch,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "events", Partition: 0, Offset: 42}}}).(*messages.OffsetCommitResponse)
	if r.Error != messages.ErrorCode_NONE {
		t.Fatalf("commit: %v %s", r.Error, r.ErrorMessage)
	}
	churn(tb)
	tb.stop()
	tb = startTestBroker(t, dir, offsetsRetentionTweak)
	churn(tb)
	tb.stop()

	tb = startTestBroker(t, dir, offsetsRetentionTweak)
	if got := fetchOffset(tb, "keep"); got != 42 {
		t.Fatalf("keep's committed offset after retention and restarts: %d, want 42", got)
	}
}

// Offsets expire as Kafka's offsets.retention.minutes says: committed a
// retention ago, in a group without members for as long; the group is then
// gone, from the listing and from the partition (tombstones), after a
// restart too. Both a group only loaded (its host expires it) and one
// with a coordinator.
func TestOffsetsOfEmptyGroupsExpire(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, dir, offsetsRetentionTweak)
	tb.createTopic("events", 1, nil)
	tb.makeOffsetsTopic()
	commit(tb, "idle", 7, "")
	tb.stop()
	tb = startTestBroker(t, dir, offsetsRetentionTweak)
	commit(tb, "idle2", 8, "")
	listed := func() []string {
		var names []string
		for _, g := range tb.ask(&messages.ListGroupsRequest{}).(*messages.ListGroupsResponse).Groups {
			names = append(names, g.Group)
		}
		return names
	}
	deadline := time.Now().Add(5 * time.Second) // idle2's listing follows its commit
	for l := listed(); !slices.Contains(l, "idle") || !slices.Contains(l, "idle2"); l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("groups listed before they expire: %v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	deadline = time.Now().Add(15 * time.Second)
	for l := listed(); slices.Contains(l, "idle") || slices.Contains(l, "idle2"); l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("groups without members nor commits for the retention still listed: %v", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, g := range []string{"idle", "idle2"} {
		if got := fetchOffset(tb, g); got != -1 {
			t.Errorf("%s's offset after it expired: %d", g, got)
		}
	}
	tb.stop()
	tb = startTestBroker(t, dir, offsetsRetentionTweak)
	for _, g := range []string{"idle", "idle2"} {
		if got := fetchOffset(tb, g); got != -1 {
			t.Errorf("%s's offset after it expired and a restart: %d", g, got)
		}
	}
}

func offsetsRetentionTweak(c *actors.BrokerConfig) {
	c.OffsetsPartitions = 1
	c.OffsetsRetention = 1500 * time.Millisecond
	c.DefaultTopic.SegmentBytes = 64 << 10
	c.RetentionCheckInterval = 100 * time.Millisecond
}

// churn has a busy group commit until retention deleted everything the
// offsets partition held when it started.
func churn(tb *testBroker) {
	tb.t.Helper()
	padding := strings.Repeat("m", 3000)
	commit(tb, "busy", 0, padding) // acknowledged: the HW is at the log end
	end := tb.fetch(actors.OffsetsTopic, 0, 0).HighWatermark
	deadline := time.Now().Add(20 * time.Second)
	for i := int64(1); ; i++ {
		commit(tb, "busy", i, padding)
		if tb.fetch(actors.OffsetsTopic, 0, 0).LogStartOffset >= end {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatal("retention deleted nothing of __consumer_offsets in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fetchOffset is group's committed offset of events-0 (-1: none).
func fetchOffset(tb *testBroker, group string) int64 {
	tb.t.Helper()
	fetched := tb.askGroup(&messages.OffsetFetchRequest{Group: group, Partitions: []*messages.TopicPartitions{{Topic: "events", Partitions: []int32{0}}}},
		func(r any) messages.ErrorCode { return r.(*messages.OffsetFetchResponse).Error }).(*messages.OffsetFetchResponse)
	if fetched.Error != messages.ErrorCode_NONE || len(fetched.Offsets) != 1 {
		tb.t.Fatalf("offset fetch of %s: %v %s %v", group, fetched.Error, fetched.ErrorMessage, fetched.Offsets)
	}
	return fetched.Offsets[0].Offset
}

func commit(tb *testBroker, group string, offset int64, metadata string) {
	tb.t.Helper()
	r := tb.askGroup(&messages.OffsetCommitRequest{Group: group, Generation: -1,
		Offsets: []*messages.OffsetCommitEntry{{Topic: "events", Partition: 0, Offset: offset, Metadata: metadata}}},
		func(r any) messages.ErrorCode { return r.(*messages.OffsetCommitResponse).Error }).(*messages.OffsetCommitResponse)
	if r.Error != messages.ErrorCode_NONE {
		tb.t.Fatalf("commit of %s: %v %s", group, r.Error, r.ErrorMessage)
	}
}
