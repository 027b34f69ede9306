package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// ListOffsets (key 2), v0–7: per partition, -1 is the high watermark, -2
// the log start, -3 (v7, KIP-734) the record with the largest timestamp
// below the high watermark, any other value the first offset whose
// timestamp is at or after it (-1/-1 without error when none is). v0
// (sarama before Kafka 0.10.1's protocol, Burrow) answers that offset as
// its list of old-style offsets, empty when there is none or
// MaxNumOffsets is 0: Kafka's v0 lists segment starts too, which no
// client needs to find where to read.

func handleListOffsets(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ListOffsetsRequest)
	type pending struct {
		topic, part int
		answer      Answer
	}
	resp := kmsg.NewPtrListOffsetsResponse()
	var waits []pending
	for ti, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			epoch := int32(-1)
			if h.version >= 4 {
				epoch = p.CurrentLeaderEpoch
			}
			waits = append(waits, pending{ti, pi, r.ask(&messages.ListOffsetsRequest{Topic: t.Topic, Partition: p.Partition,
				Timestamp: p.Timestamp, CurrentLeaderEpoch: epoch})})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return func() kmsg.Response {
		for _, w := range waits {
			rp := &resp.Topics[w.topic].Partitions[w.part]
			lr, failed := answerAs[*messages.ListOffsetsResponse](w.answer)
			switch {
			case failed != 0:
				rp.ErrorCode = failed
			default:
				rp.ErrorCode = kafkaCode(lr.Error)
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = lr.Offset, lr.Timestamp, lr.LeaderEpoch
				if lr.Error != messages.ErrorCode_NONE {
					rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
				}
			}
			if h.version == 0 {
				rp.OldStyleOffsets = []int64{}
				if rp.ErrorCode == 0 && rp.Offset >= 0 && req.Topics[w.topic].Partitions[w.part].MaxNumOffsets > 0 {
					rp.OldStyleOffsets = append(rp.OldStyleOffsets, rp.Offset)
				}
			}
		}
		return resp
	}
}
