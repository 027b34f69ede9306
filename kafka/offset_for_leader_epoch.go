package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// OffsetForLeaderEpoch (key 23), v2–4: where a leader epoch ends in the
// leader's log, for consumers that check for truncation (KIP-320).
// Advertising v2+ is what turns that check on in franz-go.

func handleOffsetForLeaderEpoch(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	type pending struct {
		topic, part int
		answer      Answer
	}
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	var waits []pending
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			// Only consumers come through this door (Kafka brokers do not
			// replicate from Sluice).
			waits = append(waits, pending{ti, pi, r.ask(&messages.OffsetForLeaderEpochRequest{Topic: t.Topic, Partition: p.Partition,
				ReplicaId: -1, CurrentLeaderEpoch: p.CurrentLeaderEpoch, Epoch: p.LeaderEpoch})})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return func() kmsg.Response {
		for _, w := range waits {
			rp := &resp.Topics[w.topic].Partitions[w.part]
			or, failed := answerAs[*messages.OffsetForLeaderEpochResponse](w.answer)
			switch {
			case failed != 0:
				rp.ErrorCode = failed
			default:
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = kafkaCode(or.Error), or.Epoch, or.EndOffset
			}
		}
		return resp
	}
}
