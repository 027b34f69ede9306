package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
)

// A committed offset is acknowledged: retention of __consumer_offsets must
// not take it while it is a group's latest, however long ago it was
// committed and however busy other groups keep the partition. Here the
// partition's retention (--offsets-retention) is 1.5 s and a busy group
// rolls its segments; a group that committed once keeps its offset across
// a restart of the broker (its coordinator reloads the partition from
// what retention left). Without the groups written again within the
// retention, its offset was gone.
func TestCommittedOffsetsOutliveRetention(t *testing.T) {
	dir := t.TempDir()
	tweak := func(c *actors.BrokerConfig) {
		c.OffsetsPartitions = 1
		c.OffsetsRetention = 1500 * time.Millisecond
		c.DefaultTopic.SegmentBytes = 64 << 10
		c.RetentionCheckInterval = 100 * time.Millisecond
	}
	padding := strings.Repeat("m", 3000)
	// churn has a busy group commit until retention deleted everything the
	// partition held when it started.
	churn := func(tb *testBroker) {
		t.Helper()
		commit(tb, "busy", 0, padding) // acknowledged: the HW is at the log end
		end := tb.fetch(actors.OffsetsTopic, 0, 0).HighWatermark
		deadline := time.Now().Add(20 * time.Second)
		for i := int64(0); ; i++ {
			commit(tb, "busy", i, padding)
			if tb.fetch(actors.OffsetsTopic, 0, 0).LogStartOffset >= end {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("retention deleted nothing of __consumer_offsets in 20 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	tb := startTestBroker(t, dir, tweak)
	tb.createTopic("events", 1, nil)
	tb.makeOffsetsTopic()
	commit(tb, "keep", 42, "")
	churn(tb) // keep's coordinator writes it again
	tb.stop()
	// After a restart nobody asks about keep: the host writes it again
	// from what it loaded.
	tb = startTestBroker(t, dir, tweak)
	tb.makeOffsetsTopic()
	churn(tb)
	tb.stop()

	tb = startTestBroker(t, dir, tweak)
	fetched := tb.askGroup(&messages.OffsetFetchRequest{Group: "keep"}, func(r any) messages.ErrorCode {
		return r.(*messages.OffsetFetchResponse).Error
	}).(*messages.OffsetFetchResponse)
	if len(fetched.Offsets) != 1 || fetched.Offsets[0].Offset != 42 {
		t.Fatalf("keep's committed offset after retention and restarts: %v, want 42", fetched.Offsets)
	}
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
