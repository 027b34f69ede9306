package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// InitProducerId (key 22), v0–4: an idempotent producer's id and epoch,
// from the same blocks Sluice's own producers get theirs from; with an id
// and epoch (v3+) it is the next epoch of that id (KIP-360). A
// transactional id is refused: there are no transactions.

func handleInitProducerID(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = errTransactionsUnknown
		return func() kmsg.Response { return resp }
	}
	ireq := &messages.InitProducerIdRequest{ProducerId: -1, ProducerEpoch: -1}
	if h.version >= 3 && req.ProducerID >= 0 {
		ireq.ProducerId, ireq.ProducerEpoch = req.ProducerID, int32(req.ProducerEpoch)
	}
	answer := r.ask(ireq)
	return func() kmsg.Response {
		ir, failed := answerAs[*messages.InitProducerIdResponse](answer)
		switch {
		case failed != 0:
			resp.ErrorCode = failed
		case ir.Error != messages.ErrorCode_NONE:
			resp.ErrorCode = kafkaCode(ir.Error)
		default:
			resp.ProducerID, resp.ProducerEpoch = ir.ProducerId, int16(ir.ProducerEpoch)
		}
		return resp
	}
}

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
