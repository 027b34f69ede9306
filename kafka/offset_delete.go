package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// OffsetDelete (key 47), v0: deletes a group's committed offsets of
// partitions its members do not consume.

func handleOffsetDelete(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	dreq := &messages.DeleteOffsetsRequest{Group: req.Group}
	for _, t := range req.Topics {
		tps := &messages.TopicPartitions{Topic: t.Topic}
		for _, p := range t.Partitions {
			tps.Partitions = append(tps.Partitions, p.Partition)
		}
		dreq.Partitions = append(dreq.Partitions, tps)
	}
	answer := r.ask(dreq)
	return func() kmsg.Response {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		dr, failed := answerAs[*messages.DeleteOffsetsResponse](answer)
		switch {
		case failed != 0:
			resp.ErrorCode = failed
			return resp
		case dr.Error == messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED:
			// Kafka answers this one per partition.
			for _, t := range req.Topics {
				rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: kafkaCode(dr.Error)})
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		case dr.Error != messages.ErrorCode_NONE:
			resp.ErrorCode = kafkaCode(dr.Error)
			return resp
		}
		for _, p := range dr.Partitions {
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != p.Topic {
				resp.Topics = append(resp.Topics, kmsg.OffsetDeleteResponseTopic{Topic: p.Topic})
			}
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: kafkaCode(p.Error)})
		}
		return resp
	}
}
