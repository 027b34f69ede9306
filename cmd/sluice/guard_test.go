package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicemq/sluice/client"
)

// rawPeer speaks protoactor's wire protocol to a broker directly, as a
// hostile peer could.
type rawPeer struct {
	t    *testing.T
	conn *grpc.ClientConn
	from string // the node address it claims
}

func dialRaw(t *testing.T, addr, from string) *rawPeer {
	t.Helper()
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawPeer{t: t, conn: conn, from: from}
}

// send sends batches on a new stream and returns once the broker has read
// them all (or closed the stream on a malformed one).
func (r *rawPeer) send(batches ...*remote.MessageBatch) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := remote.NewRemotingClient(r.conn).Receive(ctx)
	if err != nil {
		r.t.Fatalf("open stream: %v", err)
	}
	_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{
		ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
			ServerConnection: &remote.ServerConnection{SystemId: "raw", Address: r.from}}}}})
	for _, b := range batches {
		if stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}) != nil {
			break
		}
	}
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			return
		}
	}
}

// A broker process gets every protoactor and gRPC message type this
// binary knows (empty and with random bytes) addressed to its broker,
// controller and partition actors, then a stream of random envelopes and
// random batches. It stays up, its actors keep their names, and it serves
// produce and fetch afterwards.
func TestGuardKeepsBrokerUp(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "guarded", 2, nil)
	produceN(t, b.Addr, "guarded", 0, 10)

	targets := []*actor.PID{
		actor.NewPID(b.Addr, "broker"), actor.NewPID(b.Addr, "broker/controller"),
		actor.NewPID(b.Addr, "broker/p/guarded/0"), actor.NewPID(b.Addr, "broker/p/guarded/1"),
		actor.NewPID(b.Addr, "activator"), actor.NewPID(b.Addr, "future$1"), actor.NewPID(b.Addr, "nosuch"),
	}
	var names []string
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if mt.Descriptor().FullName().Parent() != "sluice" {
			names = append(names, string(mt.Descriptor().FullName()))
		}
		return true
	})
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(rng.IntN(256))
		}
		return out
	}
	from := "127.0.0.1:1"
	peer := dialRaw(t, b.Addr, from)
	sent := 0
	for _, name := range names {
		for _, body := range [][]byte{nil, randBytes(16)} {
			for _, target := range targets {
				batch := &remote.MessageBatch{TypeNames: []string{name}, Targets: []*actor.PID{target},
					Senders:   []*actor.PID{actor.NewPID(from, "x")},
					Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Sender: 1, MessageData: body}}}
				peer.send(batch)
				sent++
			}
		}
	}
	// Random envelopes over the type names a peer may name, Sluice's too.
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if mt.Descriptor().FullName().Parent() == "sluice" {
			names = append(names, string(mt.Descriptor().FullName()))
		}
		return true
	})
	for i := 0; i < 3000; i++ {
		batch := &remote.MessageBatch{TypeNames: names, Targets: targets, Senders: []*actor.PID{actor.NewPID(from, "x")}}
		for j := rng.IntN(4) + 1; j > 0; j-- {
			env := &remote.MessageEnvelope{TypeId: int32(rng.IntN(len(names) + 2)), Target: int32(rng.IntN(len(targets))),
				Sender: int32(rng.IntN(2)), MessageData: randBytes(rng.IntN(64))}
			if rng.IntN(20) == 0 {
				env.SerializerId = int32(rng.IntN(3))
			}
			batch.Envelopes = append(batch.Envelopes, env)
		}
		if rng.IntN(10) == 0 {
			// A whole batch of random bytes.
			junk := &remote.MessageBatch{}
			if proto.Unmarshal(randBytes(rng.IntN(128)), junk) == nil {
				batch = junk
			}
		}
		peer.send(batch)
		sent++
	}
	if !b.alive() {
		t.Fatalf("broker died:\n%s", tail(b.logs.String(), 40))
	}
	// Still serving: produce to both partitions, read everything back.
	produceN(t, b.Addr, "guarded", 0, 10)
	produceN(t, b.Addr, "guarded", 1, 10)
	if got := len(consumeAll(t, b.Addr, "guarded", 0)); got != 20 {
		t.Fatalf("partition 0 holds %d records, want 20", got)
	}
	if got := len(consumeAll(t, b.Addr, "guarded", 1)); got != 10 {
		t.Fatalf("partition 1 holds %d records, want 10", got)
	}
	createTopic(t, a, "after-guard", 1, nil)
	if !strings.Contains(b.logs.String(), "refused remote messages") {
		t.Fatal("the broker never logged what it refused")
	}
	if strings.Contains(b.logs.String(), "stopped; starting it again") {
		t.Fatalf("an actor was stopped from the network:\n%s", grepLines(b.logs.String(), "starting it again"))
	}
	t.Logf("%d batches sent", sent)
}

// produceN writes n acks=all records to one partition and fails the test
// unless every one is acknowledged.
func produceN(t *testing.T, addr, topic string, partition int32, n int) {
	t.Helper()
	p, err := client.NewProducer(addr, sharedOpts(), client.WithPartitioner(client.ManualPartitioner()), client.DeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, partition, err)
		}
	}
}
