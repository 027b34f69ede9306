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
