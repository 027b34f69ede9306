package controller

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/testutil"
	"github.com/sluicemq/sluice/messages"
)

// startReassignController stores topic t (partitions of states) and starts
// a controller over it with brokers 1, 2 and 3 live.
func startReassignController(t *testing.T, configs map[string]string, states ...*messages.PartitionState) (*actor.ActorSystem, *actor.PID, func(p int32) *messages.PartitionState) {
	system, backend, clusterID, lead := startStore(t, 1)
	ctx := context.Background()
	topic := &messages.TopicRecord{Name: "t", TopicId: "id-t", Partitions: int32(len(states)), ReplicationFactor: 2, Configs: configs}
	for _, st := range states {
		st.Topic, st.TopicId = "t", "id-t"
		topic.Assignment = append(topic.Assignment, &messages.ReplicaAssignment{Replicas: st.Replicas})
	}
	if err := backend.CreateTopic(ctx, lead.Fence, topic, states); err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultBrokerConfig()
	cfg.ID, cfg.ClusterID, cfg.AutoLeaderRebalance = 1, clusterID, false
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pid := system.Root.Spawn(Props(&cfg, backend, lead))
	system.Root.Send(pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 1, Addr: system.Address()},
		{ID: 2, Addr: "127.0.0.1:1"}, {ID: 3, Addr: "127.0.0.1:2"}}})
	state := func(p int32) *messages.PartitionState {
		snap, err := backend.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap.Partitions[cluster.TopicPartition{Topic: "t", Partition: p}].State
	}
	return system, pid, state
}

// The controller starts a move by storing both replica sets with what
// each adds and removes, and refuses with Kafka's codes the moves it
// cannot make: fewer replicas than min.insync.replicas, another
// replication factor when the request keeps it, a partition named twice.
func TestControllerStartsAndRefusesMoves(t *testing.T) {
	system, pid, state := startReassignController(t, map[string]string{"min.insync.replicas": "2"},
		&messages.PartitionState{Partition: 0, Leader: 1, LeaderEpoch: 3, Isr: []int32{1, 2}, PartitionEpoch: 5, Replicas: []int32{1, 2}},
		&messages.PartitionState{Partition: 1, Leader: 2, LeaderEpoch: 3, Isr: []int32{2, 3}, PartitionEpoch: 5, Replicas: []int32{2, 3}})
	ask := func(req *messages.AlterPartitionReassignmentsRequest) *messages.AlterPartitionReassignmentsResponse {
		var resp *messages.AlterPartitionReassignmentsResponse
		testutil.WaitFor(t, 10*time.Second, "an answer from the controller", func() bool {
			res, err := system.Root.RequestFuture(pid, req, 5*time.Second).Result()
			resp, _ = res.(*messages.AlterPartitionReassignmentsResponse)
			return err == nil && resp != nil && resp.Error != messages.ErrorCode_NOT_CONTROLLER
		})
		return resp
	}

	resp := ask(&messages.AlterPartitionReassignmentsRequest{Partitions: []*messages.PartitionReassignment{
		{Topic: "t", Partition: 0, Replicas: []int32{2, 3}},
		{Topic: "t", Partition: 1, Replicas: []int32{3}},
		{Topic: "t", Partition: 0, Replicas: []int32{3, 1}},
	}})
	want := []messages.ErrorCode{messages.ErrorCode_NONE, messages.ErrorCode_INVALID_REPLICATION_FACTOR, messages.ErrorCode_INVALID_REQUEST}
	for i, r := range resp.Results {
		if r.Error != want[i] || (r.Error != messages.ErrorCode_NONE && r.ErrorMessage == "") {
			t.Errorf("result %d: %v %q, want %v with a reason", i, r.Error, r.ErrorMessage, want[i])
		}
	}
	st := state(0)
	if !slices.Equal(st.Replicas, []int32{2, 3, 1}) || !slices.Equal(st.AddingReplicas, []int32{3}) ||
		!slices.Equal(st.RemovingReplicas, []int32{1}) || st.Leader != 1 || st.PartitionEpoch != 6 {
		t.Fatalf("partition 0 moving: %v", st)
	}

	resp = ask(&messages.AlterPartitionReassignmentsRequest{KeepReplicationFactor: true, Partitions: []*messages.PartitionReassignment{
		{Topic: "t", Partition: 1, Replicas: []int32{1, 2, 3}}}})
	if r := resp.Results[0]; r.Error != messages.ErrorCode_INVALID_REPLICATION_FACTOR {
		t.Errorf("a move to three replicas keeping the replication factor: %v", r)
	}

	// Cancelled: back to 1 and 2.
	resp = ask(&messages.AlterPartitionReassignmentsRequest{Partitions: []*messages.PartitionReassignment{{Topic: "t", Partition: 0}}})
	if r := resp.Results[0]; r.Error != messages.ErrorCode_NONE {
		t.Fatalf("cancel: %v", r)
	}
	if st := state(0); !sameMembers(st.Replicas, []int32{1, 2}) || len(st.AddingReplicas)+len(st.RemovingReplicas) != 0 {
		t.Fatalf("partition 0 after the cancel: %v", st)
	}
}

// A move whose target is in sync when a controller takes over (its
// predecessor died between the ISR change and the end of the move)
// completes on the new controller's first pass.
func TestNewControllerCompletesAMove(t *testing.T) {
	_, _, state := startReassignController(t, nil, &messages.PartitionState{Partition: 0, Leader: 1, LeaderEpoch: 3,
		Isr: []int32{1, 2, 3}, PartitionEpoch: 7, Replicas: []int32{2, 3, 1}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}})
	testutil.WaitFor(t, 10*time.Second, "the move completed", func() bool { return len(state(0).RemovingReplicas) == 0 })
	if st := state(0); !slices.Equal(st.Replicas, []int32{2, 3}) || !slices.Equal(st.Isr, []int32{2, 3}) || st.Leader != 2 || st.LeaderEpoch != 4 {
		t.Fatalf("after the move: %v", st)
	}
}

func sameMembers(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
