package transport

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/messages"
)

// ctxStream is the part of a gRPC stream holdUntilTaken uses: its context.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// A produce request without a sender holds its bytes in the budget until
// an answer reaches the sender it is given; one with a sender of its own
// is not counted.
func TestProduceWithoutSenderHeldUntilTaken(t *testing.T) {
	system := actor.NewActorSystem()
	b := budget.New(1<<20, 1<<20)
	data, _ := proto.Marshal(&messages.ProduceRequest{Topic: "t", Records: make([]byte, 5000)})
	batch := &remote.MessageBatch{TypeNames: []string{produceRequestName}, Targets: []*actor.PID{actor.NewPID("local", BrokerActorName)},
		Senders:   []*actor.PID{actor.NewPID("client", "reply1")},
		Envelopes: []*remote.MessageEnvelope{{MessageData: data}, {MessageData: data, Sender: 1}}}
	s := &guardedStream{ServerStream: ctxStream{ctx: context.Background()}, budget: b, system: system, origin: Origin{Peer: "10.0.0.1:5000"}}
	if err := s.holdUntilTaken(batch); err != nil {
		t.Fatal(err)
	}
	want := int64(len(data) + askOverhead)
	if got := b.Held("10.0.0.1"); got != want {
		t.Fatalf("held %d bytes, want %d (one request)", got, want)
	}
	env := batch.Envelopes[0]
	if env.Sender != 2 || batch.Envelopes[1].Sender != 1 {
		t.Fatalf("senders %d and %d, want 2 (a new reply address) and 1", env.Sender, batch.Envelopes[1].Sender)
	}
	system.Root.Send(batch.Senders[env.Sender-1], &messages.ProduceResponse{})
	deadline := time.Now().Add(5 * time.Second)
	for b.Used() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after the answer", b.Used())
		}
		time.Sleep(time.Millisecond)
	}
}
