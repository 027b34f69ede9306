package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeProducers (key 61), v0: per partition, from its leader, the
// idempotent producers whose sequences it tracks (no transactions: the
// coordinator epoch and transaction start offset are -1).

func handleDescribeProducers(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeProducersRequest)
	answers := make([][]Answer, len(req.Topics))
	for i, t := range req.Topics {
		for _, p := range t.Partitions {
			answers[i] = append(answers[i], r.ask(&messages.DescribeProducersRequest{Topic: t.Topic, Partition: p}))
		}
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeProducersResponse()
		for i, t := range req.Topics {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = p
				m, code := answerAs[*messages.DescribeProducersResponse](answers[i][j])
				if code == 0 {
					code = kafkaCode(m.Error)
				}
				rp.ErrorCode = code
				if code != 0 {
					if text := m.GetErrorMessage(); text != "" {
						rp.ErrorMessage = kmsg.StringPtr(text)
					}
				} else {
					for _, ap := range m.Producers {
						a := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
						a.ProducerID, a.ProducerEpoch, a.LastSequence, a.LastTimestamp = ap.ProducerId, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp
						a.CoordinatorEpoch, a.CurrentTxnStartOffset = -1, -1
						rp.ActiveProducers = append(rp.ActiveProducers, a)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
