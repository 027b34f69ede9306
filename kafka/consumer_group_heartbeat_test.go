package kafka

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// ConsumerGroupHeartbeat passes Kafka's nullable fields as set or unset,
// owned partitions by topic id, and answers with an assignment only when
// the coordinator sends one; a v1 heartbeat without a member id is refused
// before it reaches the coordinator.
func TestConsumerGroupHeartbeatTranslates(t *testing.T) {
	id := [16]byte{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xcd}
	var asked []*messages.ConsumerGroupHeartbeatRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		hr := req.(*messages.ConsumerGroupHeartbeatRequest)
		asked = append(asked, hr)
		resp := &messages.ConsumerGroupHeartbeatResponse{MemberId: "m1", MemberEpoch: 4, HeartbeatIntervalMs: 5000}
		if hr.MemberEpoch == 0 {
			resp.HasAssignment = true
			resp.Assignment = []*messages.TopicIdPartitions{{TopicId: hex.EncodeToString(id[:]), Partitions: []int32{0, 2}}}
		}
		return resp, nil
	}), Config{})
	beat := func(v int16, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		c := dial(t, addr)
		req.SetVersion(v)
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		return resp
	}
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.RebalanceTimeoutMillis = "g", "m1", 60000
	join.SubscribedTopicNames, join.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	join.ServerAssignor, join.SubscribedTopicRegex = kmsg.StringPtr("range"), kmsg.StringPtr("o.*")
	r := beat(1, join)
	if r.ErrorCode != 0 || r.MemberEpoch != 4 || deref(r.MemberID) != "m1" || r.HeartbeatIntervalMillis != 5000 ||
		r.Assignment == nil || r.Assignment.Topics[0].TopicID != id || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join: %+v", r)
	}
	a := asked[0]
	if !a.TopicsSet || !a.OwnedSet || !a.RegexSet || a.Regex != "o.*" || a.Assignor != "range" || a.RebalanceTimeoutMs != 60000 ||
		a.ClientHost != "/127.0.0.1" {
		t.Fatalf("asked %v", a)
	}
	// A keepalive: nothing set, nothing answered but the epoch.
	keep := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	keep.Group, keep.MemberID, keep.MemberEpoch, keep.RebalanceTimeoutMillis = "g", "m1", 4, -1
	if r := beat(1, keep); r.ErrorCode != 0 || r.Assignment != nil || r.MemberEpoch != 4 {
		t.Fatalf("keepalive: %+v", r)
	}
	if a := asked[1]; a.TopicsSet || a.OwnedSet || a.RegexSet || a.RebalanceTimeoutMs != -1 {
		t.Fatalf("keepalive asked %v", a)
	}
	// Owned partitions go by id.
	keep.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: id, Partitions: []int32{2}}}
	beat(1, keep)
	if o := asked[2].Owned; len(o) != 1 || o[0].TopicId != hex.EncodeToString(id[:]) || o[0].Partitions[0] != 2 {
		t.Fatalf("owned %v", o)
	}
	n := len(asked)
	anon := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	anon.Group, anon.RebalanceTimeoutMillis, anon.SubscribedTopicNames = "g", 1000, []string{"orders"}
	if r := beat(1, anon); r.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) || len(asked) != n {
		t.Fatalf("v1 without a member id: %+v (relayed %v)", r, len(asked) != n)
	}
	// v0: the coordinator names the member.
	if r := beat(0, anon); r.ErrorCode != 0 || len(asked) != n+1 {
		t.Fatalf("v0 without a member id: %+v", r)
	}
}

// A consumer group heartbeat or describe naming more topics, partitions
// or groups than a request may closes the connection before the
// coordinator is asked, as for every other API: the coordinator would
// otherwise hold every partition a hostile member claims to own.
func TestConsumerGroupRequestsAreBounded(t *testing.T) {
	asked := 0
	_, addr := startServer(t, answerBy(func(proto.Message) (proto.Message, error) {
		asked++
		return &messages.ConsumerGroupHeartbeatResponse{}, nil
	}), Config{MaxRequestEntries: 100})
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "m", 3, -1
	owned := kmsg.NewConsumerGroupHeartbeatRequestTopic()
	for p := range int32(101) {
		owned.Partitions = append(owned.Partitions, p)
	}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{owned}
	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	for i := range 101 {
		describe.Groups = append(describe.Groups, fmt.Sprintf("g%d", i))
	}
	subscribe := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	subscribe.Group, subscribe.MemberID, subscribe.RebalanceTimeoutMillis = "g", "m", 1000
	for i := range 101 {
		subscribe.SubscribedTopicNames = append(subscribe.SubscribedTopicNames, fmt.Sprintf("t%d", i))
	}
	for _, req := range []kmsg.Request{hb, describe, subscribe} {
		req.SetVersion(1)
		c := dial(t, addr)
		c.send(frameRequest(req, 1))
		resp := req.ResponseKind()
		resp.SetVersion(1)
		if _, err := c.read(resp); !errors.Is(err, io.EOF) {
			t.Errorf("%s with 101 entries: %v, want the connection closed", kmsg.NameForKey(req.Key()), err)
		}
	}
	if asked != 0 {
		t.Fatalf("%d requests reached the coordinator", asked)
	}
}
