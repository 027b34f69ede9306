package client

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// holdingBroker leads partition t-0 and hands each produce request to the
// test, which answers it when it wants.
type holdingBroker struct {
	addr     string
	requests chan heldProduce
}

type heldProduce struct {
	records int32
	answer  func()
}

func (h *holdingBroker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.MetadataRequest:
		ctx.Respond(leaderMetadata(h.addr, 1))
	case *messages.ProduceRequest:
		hdr, err := record.ParseHeader(m.Records)
		if err != nil {
			panic(err)
		}
		sender, root := ctx.Sender(), ctx.ActorSystem().Root
		h.requests <- heldProduce{records: hdr.RecordCount, answer: func() {
			root.Send(sender, &messages.ProduceResponse{Topic: m.Topic, Partition: m.Partition})
		}}
	}
}

// With the default linger (none), a record goes out at once when nothing
// of its partition waits for an answer; while a request does, the next
// records wait, and go out together when it is answered.
func TestRecordsWaitForTheRequestInFlightAndGoOutTogether(t *testing.T) {
	var broker *holdingBroker
	node := startFakeBroker(t, func(addr string) actor.Actor {
		broker = &holdingBroker{addr: addr, requests: make(chan heldProduce, 16)}
		return broker
	})
	p, err := NewProducer(node.Addr, WithActorSystem(node.System), Acks(LeaderAck), WithPartitioner(ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		go func() {
			for r := range broker.requests {
				r.answer()
			}
		}()
		p.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acked := make(chan error, 16)
	produce := func(v string) {
		p.Produce(ctx, &Record{Topic: "t", Partition: 0, Value: []byte(v)}, func(_ *Record, err error) { acked <- err })
	}
	next := func() heldProduce {
		t.Helper()
		select {
		case r := <-broker.requests:
			return r
		case <-ctx.Done():
			t.Fatal("no produce request came")
			return heldProduce{}
		}
	}

	produce("first")
	first := next()
	if first.records != 1 {
		t.Fatalf("the first request holds %d records, want 1", first.records)
	}
	for _, v := range []string{"a", "b", "c", "d"} {
		produce(v)
	}
	// Far longer than any linger a client defaults to: nothing goes out
	// while the first request waits for its answer.
	select {
	case r := <-broker.requests:
		t.Fatalf("a request of %d records went out while the first waited for its answer", r.records)
	case <-time.After(100 * time.Millisecond):
	}
	first.answer()
	second := next()
	if second.records != 4 {
		t.Fatalf("the second request holds %d records, want the 4 that waited", second.records)
	}
	second.answer()
	for range 5 {
		if err := <-acked; err != nil {
			t.Fatal(err)
		}
	}
}
