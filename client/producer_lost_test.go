package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/sluicemq/sluice/messages"
)

// silentOnceBroker leaves the first produce unanswered, as a broker that
// died with it does, and answers the next.
type silentOnceBroker struct {
	addr     string
	produces atomic.Int32
	held     chan struct{}
}

func (b *silentOnceBroker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.MetadataRequest:
		ctx.Respond(leaderMetadata(b.addr, 1))
	case *messages.ProduceRequest:
		if b.produces.Add(1) == 1 {
			close(b.held)
			return
		}
		ctx.Respond(&messages.ProduceResponse{Topic: m.Topic, Partition: m.Partition, BaseOffset: 7})
	}
}

// A produce in flight to a broker whose connection the transport reports
// lost is sent again at once, not after its request timeout: here the
// delivery timeout is shorter than the request timeout, so waiting would
// fail the record.
func TestProduceInFlightToALostBrokerIsSentAgain(t *testing.T) {
	var fake *silentOnceBroker
	node := startFakeBroker(t, func(addr string) actor.Actor {
		fake = &silentOnceBroker{addr: addr, held: make(chan struct{})}
		return fake
	})
	p, err := NewProducer(node.Addr, WithActorSystem(node.System), Idempotence(false), Acks(LeaderAck), RequestTimeout(time.Minute),
		DeliveryTimeout(20*time.Second), RetryBackoff(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() {
		_, _, err := p.ProduceSync(context.Background(), &Record{Topic: "t", Value: []byte("v")})
		done <- err
	}()
	<-fake.held
	node.System.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: node.Addr})
	if err := <-done; err != nil {
		t.Fatalf("produce: %v", err)
	}
	if n := fake.produces.Load(); n != 2 {
		t.Fatalf("%d produce requests, want 2", n)
	}
}
