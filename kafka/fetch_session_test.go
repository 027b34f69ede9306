package kafka

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// A session answers its incremental fetches with only what changed: the
// partitions it adds, and those whose high watermark moved; a wrong epoch
// or an unknown or closed session is refused with Kafka's codes, and a
// full cache evicts the session used least recently.
func TestFetchSessions(t *testing.T) {
	var hw atomic.Int64 // partition 1's high watermark; the others stay at 5
	hw.Store(5)
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		fr := req.(*messages.FetchRequest)
		resp := &messages.FetchResponse{Topic: fr.Topic, Partition: fr.Partition, HighWatermark: 5, LogStartOffset: 0}
		if fr.Partition == 1 {
			resp.HighWatermark = hw.Load()
		}
		return resp, nil
	}), Config{FetchSessions: 2})
	c := dial(t, addr)
	corr := int32(0)
	fetch := func(id, epoch int32, parts []int32, forget []int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.SessionID, req.SessionEpoch, req.MaxBytes = id, epoch, 1<<20
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			for _, p := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 5, 1<<20, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(forget) > 0 {
			req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: forget}}
		}
		corr++
		c.send(frameRequest(req, corr))
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		if _, err := c.read(resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	answered := func(resp *kmsg.FetchResponse) []int32 {
		t.Helper()
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch refused: code %d", resp.ErrorCode)
		}
		var out []int32
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				out = append(out, p.Partition)
			}
		}
		return out
	}

	full := fetch(0, 0, []int32{0, 1, 2}, nil)
	id := full.SessionID
	if id == 0 || len(answered(full)) != 3 {
		t.Fatalf("opening a session: id %d, partitions %v", id, answered(full))
	}
	if got := answered(fetch(id, 1, nil, nil)); len(got) != 0 {
		t.Errorf("an idle incremental fetch answered %v", got)
	}
	hw.Store(9)
	if got := answered(fetch(id, 2, nil, nil)); len(got) != 1 || got[0] != 1 {
		t.Errorf("after partition 1's HW moved: %v", got)
	}
	if got := answered(fetch(id, 3, []int32{3}, []int32{0})); len(got) != 1 || got[0] != 3 {
		t.Errorf("adding 3 and forgetting 0: %v", got)
	}
	if r := fetch(id, 3, nil, nil); r.ErrorCode != errInvalidFetchSessionEpoch {
		t.Errorf("a repeated epoch: code %d", r.ErrorCode)
	}
	if r := fetch(id+1, 1, nil, nil); r.ErrorCode != errFetchSessionNotFound {
		t.Errorf("an unknown session: code %d", r.ErrorCode)
	}
	// Closed with epoch -1: a sessionless full fetch.
	if r := fetch(id, -1, []int32{0}, nil); r.SessionID != 0 || len(answered(r)) != 1 {
		t.Errorf("closing: session %d, %v", r.SessionID, answered(r))
	}
	if r := fetch(id, 4, nil, nil); r.ErrorCode != errFetchSessionNotFound {
		t.Errorf("a closed session: code %d", r.ErrorCode)
	}
	// Two slots: a third session evicts the least recently used.
	a, b := fetch(0, 0, []int32{0}, nil).SessionID, fetch(0, 0, []int32{0}, nil).SessionID
	fetch(a, 1, nil, nil) // a is used; b is the oldest now
	fetch(0, 0, []int32{0}, nil)
	if r := fetch(b, 1, nil, nil); r.ErrorCode != errFetchSessionNotFound {
		t.Errorf("the evicted session: code %d", r.ErrorCode)
	}
	if r := fetch(a, 2, nil, nil); r.ErrorCode != 0 {
		t.Errorf("the kept session: code %d", r.ErrorCode)
	}
}
