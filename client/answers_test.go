package client

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
)

// mixUpBroker is a broker that answers every produce and fetch as if it
// had been asked about another partition.
type mixUpBroker struct{ addr string }

func (m *mixUpBroker) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *messages.MetadataRequest:
		ctx.Respond(leaderMetadata(m.addr, 1))
	case *messages.ProduceRequest:
		ctx.Respond(&messages.ProduceResponse{Topic: "other", Partition: 7, BaseOffset: 42})
	case *messages.FetchRequest:
		ctx.Respond(&messages.FetchResponse{Topic: "other", Partition: 7, HighWatermark: 100})
	case *messages.ListOffsetsRequest:
		ctx.Respond(&messages.ListOffsetsResponse{Topic: "t", Partition: 0, Offset: 0})
	}
}

// An answer for another partition does not complete a produce: the
// record fails instead of being reported written.
func TestProduceAnswerForAnotherPartitionIsNotAnAck(t *testing.T) {
	node := startFakeBroker(t, func(addr string) actor.Actor { return &mixUpBroker{addr: addr} })
	p, err := NewProducer(node.Addr, WithActorSystem(node.System), Idempotence(false), WithPartitioner(ManualPartitioner()), DeliveryTimeout(2*time.Second),
		RequestTimeout(time.Second), RetryBackoff(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	part, off, err := p.ProduceSync(ctx, &Record{Topic: "t", Partition: 0, Value: []byte("v")})
	if err == nil {
		t.Fatalf("acknowledged at %d-%d by an answer about other-7", part, off)
	}
	t.Logf("produce failed: %v", err)
}
