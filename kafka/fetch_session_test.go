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

// The cache is bounded in partitions: a session with more than a
// request's entries is closed, and sessions over the cache's total are
// evicted, the least recently used first, never the one being served.
func TestFetchSessionsBounded(t *testing.T) {
	c := &fetchSessions{max: 10, maxParts: 5}
	a := c.open()
	if !c.resized(a, 3) {
		t.Fatal("a dropped")
	}
	b := c.open()
	if !c.resized(b, 3) { // 6 > 5: a goes
		t.Fatal("b dropped")
	}
	if c.get(a.id) != nil || c.get(b.id) == nil || c.parts != 3 {
		t.Fatalf("after b grew: a %v, b %v, parts %d", c.get(a.id), c.get(b.id), c.parts)
	}
	if !c.resized(b, 9) || c.parts != 9 {
		t.Fatalf("b alone over the bound: parts %d", c.parts) // nothing else to evict
	}
	c.remove(b.id)
	if c.parts != 0 || len(c.byID) != 0 {
		t.Fatalf("after removing b: parts %d, %d sessions", c.parts, len(c.byID))
	}

	// Through the listener: a session grown past a request's entries is
	// closed.
	_, addr := startServer(t, oneAnswer(&messages.FetchResponse{}), Config{MaxRequestEntries: 3})
	cl := dial(t, addr)
	fetch := func(id, epoch int32, parts ...int32) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.SessionID, req.SessionEpoch = id, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		cl.send(frameRequest(req, epoch+1))
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		if _, err := cl.read(resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	id := fetch(0, 0, 0, 1, 2).SessionID
	if r := fetch(id, 1, 3, 4); r.ErrorCode != errFetchSessionNotFound {
		t.Fatalf("a session of 5 partitions with a limit of 3: code %d", r.ErrorCode)
	}
	if r := fetch(id, 2); r.ErrorCode != errFetchSessionNotFound {
		t.Fatalf("the closed session: code %d", r.ErrorCode)
	}
}
