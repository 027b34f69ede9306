package client

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// mixUpBroker is a broker that answers every produce and fetch as if it
// had been asked about another partition.
type mixUpBroker struct{ addr string }

func (m *mixUpBroker) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *messages.MetadataRequest:
		ctx.Respond(&messages.MetadataResponse{Brokers: []*messages.BrokerInfo{{Id: 1, Address: m.addr}}, ControllerId: 1,
			Topics: []*messages.TopicMetadata{{Name: "t", Partitions: []*messages.PartitionMetadata{{Partition: 0, Leader: 1, Replicas: []int32{1}, Isr: []int32{1}}}}}})
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
	node, err := transport.Start(transport.Config{Host: "127.0.0.1"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop()
	if _, err := node.System.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &mixUpBroker{addr: node.Addr} }),
		transport.BrokerActorName); err != nil {
		t.Fatal(err)
	}
	// One node in the process (protoactor's remote sets gRPC's global
	// logger as it starts): the producer runs on the broker's.
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
