package client

import (
	"log/slog"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// startFakeBroker starts a node of its own with, as its broker actor, the
// actor makeBroker returns for the node's address. The node stops when
// the test ends; clients of the fake run on its actor system
// (WithActorSystem: protoactor's remote sets gRPC's global logger as it
// starts, so one node per process).
func startFakeBroker(t *testing.T, makeBroker func(addr string) actor.Actor) *transport.Node {
	t.Helper()
	node, err := transport.Start(transport.Config{Host: "127.0.0.1"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Stop)
	broker := makeBroker(node.Addr)
	if _, err := node.System.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return broker }), transport.BrokerActorName); err != nil {
		t.Fatal(err)
	}
	return node
}

// leaderMetadata is the metadata of a cluster of one broker, at addr,
// that leads partitions 0 to n-1 of topic "t".
func leaderMetadata(addr string, n int32) *messages.MetadataResponse {
	topic := &messages.TopicMetadata{Name: "t"}
	for p := range n {
		topic.Partitions = append(topic.Partitions, &messages.PartitionMetadata{Partition: p, Leader: 1, Replicas: []int32{1}, Isr: []int32{1}})
	}
	return &messages.MetadataResponse{Brokers: []*messages.BrokerInfo{{Id: 1, Address: addr}}, ControllerId: 1,
		Topics: []*messages.TopicMetadata{topic}}
}
