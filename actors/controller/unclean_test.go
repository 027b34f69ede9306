package controller

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// A partition left without a leader because its only in-sync replica is
// gone gets one as soon as unclean leader election is allowed, by the
// topic or as the cluster's dynamic default, as Kafka elects when the
// config changes: the controller does not wait for a broker to come or go.
func TestUncleanElectionFollowsTheConfig(t *testing.T) {
	for _, how := range []string{"topic", "cluster default"} {
		t.Run(how, func(t *testing.T) {
			system, backend, clusterID, lead := startStore(t, 0)
			ctx := context.Background()
			topic := &messages.TopicRecord{Name: "t", TopicId: "0123456789abcdef0123456789abcdef", Partitions: 1}
			offline := &messages.PartitionState{Topic: "t", Partition: 0, TopicId: topic.TopicId, Replicas: []int32{0, 1},
				Isr: []int32{1}, Leader: -1, LeaderEpoch: 3, PartitionEpoch: 5}
			if err := backend.CreateTopic(ctx, lead.Fence, topic, []*messages.PartitionState{offline}); err != nil {
				t.Fatal(err)
			}
			cfg := actors.DefaultBrokerConfig()
			cfg.ClusterID = clusterID
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			pid := system.Root.Spawn(Props(&cfg, backend, lead))
			snap, err := backend.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			system.Root.Send(pid, &MetadataUpdated{Snap: snap})
			system.Root.Send(pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 0, Addr: system.Address()}}})
			leader := func() int32 {
				snap, err := backend.Load(ctx)
				if err != nil {
					t.Fatal(err)
				}
				system.Root.Send(pid, &MetadataUpdated{Snap: snap}) // as the broker's watch does
				return snap.Partitions[cluster.TopicPartition{Topic: "t", Partition: 0}].State.Leader
			}
			// With unclean election off, replica 0 (out of sync) does not
			// lead: once the controller has answered a request sent after
			// the brokers, it has decided on them.
			if _, err := system.Root.RequestFuture(pid, &messages.AlterTopicConfigsRequest{ValidateOnly: true}, 10*time.Second).Result(); err != nil {
				t.Fatal(err)
			}
			if l := leader(); l != -1 {
				t.Fatalf("the out-of-sync replica was elected with unclean election off: leader %d", l)
			}
			var change any
			if how == "topic" {
				change = &messages.AlterTopicConfigsRequest{Topics: []*messages.TopicConfigChange{{Name: "t",
					Set: map[string]string{"unclean.leader.election.enable": "true"}}}}
			} else {
				change = &messages.AlterBrokerConfigsRequest{BrokerId: -1, Set: []*messages.ConfigValue{{Name: "unclean.leader.election.enable", Value: "true"}}}
			}
			if _, err := system.Root.RequestFuture(pid, change, 10*time.Second).Result(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for leader() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("no unclean election within 10 s of allowing it")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
