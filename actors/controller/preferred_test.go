package controller

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/testutil"
	"github.com/sluicemq/sluice/messages"
)

// With leader balancing on, the controller gives a partition back to its
// preferred replica (its first) when that replica is alive and in the
// ISR, bumping the leader epoch; a partition whose preferred replica is
// out of the ISR keeps its leader.
func TestControllerGivesLeadershipBackToPreferredReplicas(t *testing.T) {
	system, backend, clusterID, lead := startStore(t, 1)
	ctx := context.Background()
	topic := &messages.TopicRecord{Name: "t", TopicId: "id-t", Partitions: 2, ReplicationFactor: 2,
		Assignment: []*messages.ReplicaAssignment{{Replicas: []int32{1, 2}}, {Replicas: []int32{1, 2}}}}
	parts := []*messages.PartitionState{
		// Led by 2, though 1 is preferred and in sync: moves back to 1.
		{Topic: "t", TopicId: "id-t", Partition: 0, Leader: 2, LeaderEpoch: 3, Isr: []int32{2, 1}, PartitionEpoch: 5, Replicas: []int32{1, 2}},
		// Led by 2 with 1 out of the ISR: stays.
		{Topic: "t", TopicId: "id-t", Partition: 1, Leader: 2, LeaderEpoch: 3, Isr: []int32{2}, PartitionEpoch: 5, Replicas: []int32{1, 2}},
	}
	if err := backend.CreateTopic(ctx, lead.Fence, topic, parts); err != nil {
		t.Fatal(err)
	}

	cfg := actors.DefaultBrokerConfig()
	cfg.ID, cfg.ClusterID = 1, clusterID
	cfg.LeaderImbalanceCheckInterval = 20 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pid := system.Root.Spawn(Props(&cfg, backend, lead))
	system.Root.Send(pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 1, Addr: system.Address()}, {ID: 2, Addr: "127.0.0.1:1"}}})

	state := func(p int32) *messages.PartitionState {
		snap, err := backend.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap.Partitions[cluster.TopicPartition{Topic: "t", Partition: p}].State
	}
	testutil.WaitFor(t, 10*time.Second, "partition 0 led by its preferred replica", func() bool { return state(0).Leader == 1 })
	if st := state(0); st.LeaderEpoch != 4 || st.PartitionEpoch != 6 || len(st.Isr) != 2 {
		t.Fatalf("partition 0 after the election: %v", st)
	}
	if st := state(1); st.Leader != 2 || st.LeaderEpoch != 3 {
		t.Fatalf("partition 1, its preferred replica out of the ISR, changed: %v", st)
	}
}

// An ElectLeaders request naming a partition twice gets one result for it
// and the election is made (a second write of the same partition would
// conflict with the first and fail both).
func TestElectLeadersNamesAPartitionOnce(t *testing.T) {
	system, backend, clusterID, lead := startStore(t, 1)
	ctx := context.Background()
	topic := &messages.TopicRecord{Name: "t", TopicId: "id-t", Partitions: 1, ReplicationFactor: 2,
		Assignment: []*messages.ReplicaAssignment{{Replicas: []int32{1, 2}}}}
	parts := []*messages.PartitionState{{Topic: "t", TopicId: "id-t", Partition: 0, Leader: 2, LeaderEpoch: 3,
		Isr: []int32{2, 1}, PartitionEpoch: 5, Replicas: []int32{1, 2}}}
	if err := backend.CreateTopic(ctx, lead.Fence, topic, parts); err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultBrokerConfig()
	cfg.ID, cfg.ClusterID, cfg.AutoLeaderRebalance = 1, clusterID, false
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pid := system.Root.Spawn(Props(&cfg, backend, lead))
	system.Root.Send(pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 1, Addr: system.Address()}, {ID: 2, Addr: "127.0.0.1:1"}}})

	var resp *messages.ElectLeadersResponse
	testutil.WaitFor(t, 10*time.Second, "an answer from the controller", func() bool {
		res, err := system.Root.RequestFuture(pid, &messages.ElectLeadersRequest{Partitions: []*messages.TopicPartitions{
			{Topic: "t", Partitions: []int32{0, 0}}, {Topic: "t", Partitions: []int32{0}}}}, 5*time.Second).Result()
		resp, _ = res.(*messages.ElectLeadersResponse)
		return err == nil && resp != nil && resp.Error != messages.ErrorCode_NOT_CONTROLLER
	})
	if len(resp.Results) != 1 || resp.Results[0].Error != messages.ErrorCode_NONE {
		t.Fatalf("results %v, want one election of t-0", resp.Results)
	}
}
