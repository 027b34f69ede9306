package kafka

import (
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Kafka's consumer group protocol (KIP-848), served by Sluice's group
// coordinators (actors/consumergroup): the coordinator assigns, members
// only heartbeat.
//
// ConsumerGroupHeartbeat (key 68), v0–1: join (epoch 0), leave (-1, or -2
// for a static member), or report what the member owns and get what it
// is to hold. v1 members name themselves; v0 members get their id from
// the coordinator. Partitions go by topic id both ways.
//
// ConsumerGroupDescribe (key 69), v0–1: consumer_group_describe.go.

func handleConsumerGroupHeartbeat(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberEpoch = req.MemberEpoch
	if h.version >= 1 && req.MemberID == "" {
		resp.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
		resp.ErrorMessage = kmsg.StringPtr("MemberId can't be empty: from version 1 members name themselves")
		return func() kmsg.Response { return resp }
	}
	m := &messages.ConsumerGroupHeartbeatRequest{Group: req.Group, MemberId: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceId: deref(req.InstanceID), RackId: deref(req.RackID), RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		Topics: req.SubscribedTopicNames, TopicsSet: req.SubscribedTopicNames != nil, Assignor: deref(req.ServerAssignor),
		OwnedSet: req.Topics != nil, ClientHost: "/" + r.conn.ip}
	if req.SubscribedTopicRegex != nil {
		m.Regex, m.RegexSet = *req.SubscribedTopicRegex, true
	}
	if h.clientID != nil {
		m.ClientId = *h.clientID
	}
	for _, t := range req.Topics {
		m.Owned = append(m.Owned, &messages.TopicIdPartitions{TopicId: hex.EncodeToString(t.TopicID[:]), Partitions: t.Partitions})
	}
	answer := r.askFor(m, r.conn.srv.cfg.RequestTimeout+5*time.Second)
	return func() kmsg.Response {
		hr, failed := answerAs[*messages.ConsumerGroupHeartbeatResponse](answer)
		if failed != 0 {
			resp.ErrorCode = failed
			return resp
		}
		resp.ErrorCode = kafkaCode(hr.Error)
		if hr.ErrorMessage != "" {
			resp.ErrorMessage = kmsg.StringPtr(hr.ErrorMessage)
		}
		resp.MemberEpoch, resp.HeartbeatIntervalMillis = hr.MemberEpoch, hr.HeartbeatIntervalMs
		if hr.MemberId != "" {
			resp.MemberID = kmsg.StringPtr(hr.MemberId)
		}
		if hr.HasAssignment && hr.Error == messages.ErrorCode_NONE {
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for _, t := range hr.Assignment {
				at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				at.TopicID, at.Partitions = topicID(t.TopicId), t.Partitions
				a.Topics = append(a.Topics, at)
			}
			resp.Assignment = &a
		}
		return resp
	}
}
