package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Fetch (key 1), v0–12: every partition is read from its leader as a
// Sluice FetchRequest. A partition named more than once is answered once,
// where it first appears (as Kafka does). The response holds at most the
// smaller of the client's MaxBytes and the broker's MaxFetchBytes: the
// partitions are read in request order, a few at a time, each within its
// own limit and what is left of the response's, and once that is spent
// the rest answer their offsets only; the first partition with records
// is kept whole even above the limits (KIP-74), later ones only within
// them. If the records read come to less than MinBytes, a second round
// parks a fetch on every partition for MaxWait and answers as soon as one
// has records (Kafka's long poll). From v7, fetches may keep a session
// (fetch_session.go).

const errFetchSessionNotFound int16 = 70

// fetchWave is how many partitions are read at once: a response's worst
// case is its limit plus this many batches over their partitions' limits.
const fetchWave = 8

// fetchPart is one partition of a fetch: where it sits in the response,
// and what to ask its leader.
type fetchPart struct {
	topic, part int
	maxBytes    int32 // the client's limit for this partition
	name        string
	partition   int32
	offset      int64
	epoch       int32
}

// request is the leader's fetch of p, for at most maxBytes.
func (p fetchPart) request(maxBytes int32) *messages.FetchRequest {
	return &messages.FetchRequest{Topic: p.name, Partition: p.partition, Offset: p.offset, CurrentLeaderEpoch: p.epoch, MaxBytes: maxBytes}
}

func handleFetch(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.FetchRequest)
	resp := kmsg.NewPtrFetchResponse()
	var session *fetchSession
	incremental := false
	if h.version >= 7 {
		sessions := &r.conn.srv.fetchSessions
		switch {
		case req.SessionEpoch == -1: // no session, and close the one named
			if req.SessionID != 0 {
				sessions.remove(req.SessionID)
			}
		case req.SessionEpoch == 0: // a full fetch that opens a session
			if req.SessionID != 0 {
				sessions.remove(req.SessionID)
			}
			session = sessions.open()
		default:
			if session = sessions.get(req.SessionID); session == nil {
				resp.ErrorCode = errFetchSessionNotFound
				return func() kmsg.Response { return resp }
			}
			incremental = true
		}
	}
	if session != nil {
		session.mu.Lock()
		if incremental && req.SessionEpoch != session.epoch {
			resp.ErrorCode = errInvalidFetchSessionEpoch
			session.mu.Unlock()
			return func() kmsg.Response { return resp }
		}
		session.update(req, h.version)
		if incremental {
			session.epoch++
		}
		sessions := &r.conn.srv.fetchSessions
		over := len(session.parts) > r.conn.srv.cfg.MaxRequestEntries
		if over || !sessions.resized(session, len(session.parts)) {
			// Too big to keep, or evicted meanwhile: the client starts
			// over with a full fetch.
			sessions.remove(session.id)
			session.mu.Unlock()
			resp.ErrorCode = errFetchSessionNotFound
			return func() kmsg.Response { return resp }
		}
		req = session.asRequest(req)
		resp.SessionID = session.id
		// Held until the answer is trimmed: a fetch of the session sent
		// before this one's answer waits.
	}
	maxBytes := int32(r.conn.srv.cfg.MaxFetchBytes)
	if h.version >= 3 && req.MaxBytes > 0 {
		maxBytes = min(maxBytes, req.MaxBytes)
	}
	parts := fetchParts(resp, req, h.version)
	return func() kmsg.Response {
		if session != nil {
			defer session.mu.Unlock()
			defer session.trim(resp, incremental)
		}
		got := readParts(r, resp, parts, maxBytes)
		if got >= int(max(req.MinBytes, 1)) || req.MaxWaitMillis <= 0 {
			return resp
		}
		longPoll(r, resp, parts, maxBytes, time.Duration(req.MaxWaitMillis)*time.Millisecond)
		return resp
	}
}

// fetchParts lays out the response, one entry per distinct partition in
// the order of first appearance, and returns what to ask for each.
func fetchParts(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, version int16) []fetchPart {
	type tp struct {
		topic     string
		partition int32
	}
	seen := map[tp]bool{}
	topicAt := map[string]int{}
	var parts []fetchPart
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if seen[tp{t.Topic, p.Partition}] {
				continue
			}
			seen[tp{t.Topic, p.Partition}] = true
			ti, ok := topicAt[t.Topic]
			if !ok {
				ti = len(resp.Topics)
				topicAt[t.Topic] = ti
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.PreferredReadReplica = p.Partition, -1, -1
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
			epoch := int32(-1)
			if version >= 9 {
				epoch = p.CurrentLeaderEpoch
			}
			parts = append(parts, fetchPart{topic: ti, part: len(resp.Topics[ti].Partitions) - 1, maxBytes: max(p.PartitionMaxBytes, 0),
				name: t.Topic, partition: p.Partition, offset: p.FetchOffset, epoch: epoch})
		}
	}
	return parts
}

// readParts reads every partition once, without waiting, within maxBytes
// in all, and returns how many record bytes the response holds.
func readParts(r *request, resp *kmsg.FetchResponse, parts []fetchPart, maxBytes int32) int {
	left, got := int(maxBytes), 0
	for len(parts) > 0 {
		// A wave: the next partitions whose limits fit in what is left,
		// or, once nothing is left, all the rest for their offsets only.
		type asked struct {
			p      fetchPart
			limit  int
			answer Answer
		}
		var wave []asked
		reserved := 0
		for len(parts) > 0 && (left == 0 || len(wave) < fetchWave && reserved < left) {
			p := parts[0]
			parts = parts[1:]
			limit := max(0, min(int(p.maxBytes), left-reserved))
			q := p.request(int32(limit))
			q.OffsetsOnly = limit == 0
			reserved += limit
			wave = append(wave, asked{p, limit, r.ask(q)})
		}
		for _, a := range wave {
			n := fill(resp, a.p, a.answer)
			if n > a.limit && got > 0 {
				// Over its limit (a whole first batch): only the first
				// partition with records may be.
				resp.Topics[a.p.topic].Partitions[a.p.part].RecordBatches = nil
				continue
			}
			got += n
			left = max(left-n, 0)
		}
	}
	return got
}

// longPoll parks a fetch on every partition that answered without an
// error and fills the response with the first that has records. A wait
// longer than a request may take is cut to fit in it.
func longPoll(r *request, resp *kmsg.FetchResponse, parts []fetchPart, maxBytes int32, maxWait time.Duration) {
	wait := max(0, min(maxWait, r.conn.srv.cfg.RequestTimeout-2*time.Second))
	type result struct {
		p fetchPart
		received
	}
	var parked []fetchPart
	for _, p := range parts {
		if resp.Topics[p.topic].Partitions[p.part].ErrorCode == 0 {
			parked = append(parked, p)
		}
	}
	done := make(chan result, len(parked))
	for _, p := range parked {
		// Each may wake the poll; together they stay within the limit.
		q := p.request(max(1, min(p.maxBytes, maxBytes/int32(len(parked)))))
		q.MinBytes, q.MaxWaitMs = 1, int32(wait/time.Millisecond)
		answer := r.ask(q)
		go func() {
			res, err := answer.Wait()
			done <- result{p, received{res, err}}
		}()
	}
	timer := time.NewTimer(wait + time.Second)
	defer timer.Stop()
	for range parked {
		select {
		case d := <-done:
			if fill(resp, d.p, d.received) > 0 {
				return
			}
		case <-timer.C:
			return
		}
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
