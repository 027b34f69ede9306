package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// OffsetCommit (key 8), v0–9: a member's commit (its id and generation)
// or a standalone one (generation -1, no member id: kadm and assign-mode
// consumers), accepted while the group has no members.

// offsetMetadataMaxBytes is the broker's limit on a commit's metadata
// (actors.OffsetMetadataMaxBytes, Kafka's offset.metadata.max.bytes).
const offsetMetadataMaxBytes = 4096

func handleOffsetCommit(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetCommitRequest)
	creq := &messages.OffsetCommitRequest{Group: req.Group, MemberId: req.MemberID, Generation: req.Generation, InstanceId: deref(req.InstanceID)}
	if h.version == 0 {
		creq.Generation = -1 // v0 has no member: a standalone commit
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			e := &messages.OffsetCommitEntry{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
			if p.Metadata != nil {
				e.Metadata = *p.Metadata
			}
			creq.Offsets = append(creq.Offsets, e)
		}
	}
	answer := r.ask(creq)
	return func() kmsg.Response {
		code := errorOf(answer, func(m *messages.OffsetCommitResponse) messages.ErrorCode { return m.Error })
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
