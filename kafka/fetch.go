package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Fetch (key 1), v0–12: every partition is read from its leader as a
// Sluice FetchRequest. A first round reads what is there; if it holds less
// than MinBytes, a second round parks a fetch on every partition for
// MaxWait and answers as soon as one has records (Kafka's long poll).
// Sessions are not kept: the answer's session id is always 0, which
// clients take as a full fetch each time (KIP-227), and a request naming a
// session gets FETCH_SESSION_ID_NOT_FOUND. A partition answers at least one
// whole batch even above its byte limit (KIP-74).

const errFetchSessionNotFound int16 = 70

// fetchPart is one partition of a fetch: where it sits in the response,
// and what to ask its leader.
type fetchPart struct {
	topic, part int
	req         *messages.FetchRequest
}

func handleFetch(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.FetchRequest)
	resp := kmsg.NewPtrFetchResponse()
	if h.version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = errFetchSessionNotFound
		return func() kmsg.Response { return resp }
	}
	maxBytes := req.MaxBytes
	if h.version < 3 || maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	var parts []fetchPart
	for ti, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.PreferredReadReplica = p.Partition, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			epoch := int32(-1)
			if h.version >= 9 {
				epoch = p.CurrentLeaderEpoch
			}
			parts = append(parts, fetchPart{topic: ti, part: pi, req: &messages.FetchRequest{Topic: t.Topic, Partition: p.Partition,
				Offset: p.FetchOffset, MaxBytes: min(p.PartitionMaxBytes, maxBytes), CurrentLeaderEpoch: epoch}})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	first := make([]Answer, len(parts))
	for i, p := range parts {
		first[i] = r.ask(p.req) // no wait: what each leader has now
	}
	return func() kmsg.Response {
		got := 0
		for i, p := range parts {
			got += fill(resp, p, first[i])
		}
		if got >= int(max(req.MinBytes, 1)) || req.MaxWaitMillis <= 0 {
			return trim(resp, maxBytes)
		}
		// Nothing yet: park a fetch on every partition that answered
		// without an error, and answer with the first that has records.
		// A wait longer than a request may take is cut to fit in it.
		wait := max(0, min(time.Duration(req.MaxWaitMillis)*time.Millisecond, r.conn.srv.cfg.RequestTimeout-2*time.Second))
		maxWaitMs := int32(wait / time.Millisecond)
		type result struct {
			p fetchPart
			received
		}
		done := make(chan result, len(parts))
		asked := 0
		for _, p := range parts {
			if resp.Topics[p.topic].Partitions[p.part].ErrorCode != 0 {
				continue
			}
			parked := proto.Clone(p.req).(*messages.FetchRequest)
			parked.MinBytes, parked.MaxWaitMs = 1, maxWaitMs
			answer := r.ask(parked)
			asked++
			go func() {
				res, err := answer.Wait()
				done <- result{p, received{res, err}}
			}()
		}
		timer := time.NewTimer(wait + time.Second)
		defer timer.Stop()
		for ; asked > 0; asked-- {
			select {
			case d := <-done:
				if fill(resp, d.p, d.received) > 0 {
					return trim(resp, maxBytes)
				}
			case <-timer.C:
				return trim(resp, maxBytes)
			}
		}
		return trim(resp, maxBytes)
	}
}

// received is an answer already in hand.
type received struct {
	res proto.Message
	err error
}

func (a received) Wait() (proto.Message, error) { return a.res, a.err }

// fill puts a partition's answer into the response and returns how many
// record bytes it added.
func fill(resp *kmsg.FetchResponse, p fetchPart, answer Answer) int {
	rp := &resp.Topics[p.topic].Partitions[p.part]
	fr, failed := answerAs[*messages.FetchResponse](answer)
	if failed != 0 {
		rp.ErrorCode = failed
		return 0
	}
	rp.ErrorCode = kafkaCode(fr.Error)
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = fr.HighWatermark, fr.HighWatermark, fr.LogStartOffset
	if fr.Error != messages.ErrorCode_NONE {
		return 0
	}
	n := 0
	for _, b := range fr.Batches {
		n += len(b)
	}
	batches := make([]byte, 0, n)
	for _, b := range fr.Batches {
		batches = append(batches, b...)
	}
	rp.RecordBatches = batches
	return n
}

// trim keeps the response within maxBytes: partitions are kept in order
// while they fit, and the first partition with records is always kept
// whole (KIP-74); records dropped here are fetched again next time.
func trim(resp *kmsg.FetchResponse, maxBytes int32) kmsg.Response {
	total, kept := 0, false
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			n := len(rp.RecordBatches)
			if n == 0 {
				continue
			}
			if kept && total+n > int(maxBytes) {
				rp.RecordBatches = nil
				continue
			}
			total, kept = total+n, true
		}
	}
	return resp
}
