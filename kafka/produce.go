package kafka

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Produce (key 0), v0–11: each partition's batch goes to its leader as a
// Sluice ProduceRequest, sent in arrival order; the batch stays as the
// client wrote it (RecordBatch v2), checked by the leader. acks=0 gets no
// response at all; the leader still tells the listener when it has taken
// the batch, which is when the request's bytes are released.

// Kafka codes of batches refused here, before they reach a leader.
const (
	errInvalidRecord       int16 = 87 // not exactly one v2 batch
	errCorruptMessage      int16 = 2
	errInvalidTopic        int16 = 17
	errTransactionsUnknown int16 = 42 // INVALID_REQUEST: no transactions
)

func handleProduce(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ProduceRequest)
	type pending struct {
		topic, part int
		answer      Answer
	}
	resp := kmsg.NewPtrProduceResponse()
	var waits []pending
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, -1, -1, -1
			if code, why := checkBatch(t.Topic, p.Records, req.TransactionID); code != 0 {
				rp.ErrorCode, rp.ErrorMessage = code, kmsg.StringPtr(why)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			preq := &messages.ProduceRequest{Topic: t.Topic, Partition: p.Partition, Acks: int32(req.Acks),
				TimeoutMs: req.TimeoutMillis, Records: p.Records}
			waits = append(waits, pending{ti, pi, r.ask(preq)})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 {
		// No response, but the request holds its connection's place and
		// its bytes until each partition has taken its batch: a flood of
		// acks=0 requests waits for the partitions instead of piling up
		// in the broker.
		return func() kmsg.Response {
			for _, w := range waits {
				w.answer.Wait()
			}
			return nil
		}
	}
	return func() kmsg.Response {
		for _, w := range waits {
			rp := &resp.Topics[w.topic].Partitions[w.part]
			res, err := w.answer.Wait()
			pr, ok := res.(*messages.ProduceResponse)
			switch {
			case err != nil:
				// The batch may or may not have been written, as with a
				// Kafka broker that times out.
				rp.ErrorCode, rp.ErrorMessage = int16(messages.ErrorCode_REQUEST_TIMED_OUT), kmsg.StringPtr(err.Error())
			case !ok:
				rp.ErrorCode = errUnknownServerError
			default:
				rp.ErrorCode, rp.BaseOffset, rp.LogStartOffset = kafkaCode(pr.Error), pr.BaseOffset, pr.LogStartOffset
				if pr.ErrorMessage != "" {
					rp.ErrorMessage = kmsg.StringPtr(pr.ErrorMessage)
				}
			}
		}
		return resp
	}
}

// checkBatch refuses what no leader should see: a write to the internal
// topic, a transactional batch, and anything but one RecordBatch v2.
func checkBatch(topic string, records []byte, transactionID *string) (int16, string) {
	switch {
	case messages.IsInternalTopic(topic):
		return errInvalidTopic, "the internal topic " + topic + " cannot be produced to"
	case transactionID != nil:
		return errTransactionsUnknown, "transactions are not supported"
	case len(records) < 61:
		return errCorruptMessage, "no record batch"
	case records[16] < 2:
		return errCorruptMessage, "message format v0 and v1 are not supported; use a client that writes record batches (magic 2)"
	}
	if n := int(int32(binary.BigEndian.Uint32(records[8:]))) + 12; n != len(records) {
		return errInvalidRecord, "a produce request carries exactly one record batch per partition"
	}
	return 0, ""
}
