package metrics

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

func status(st *messages.ReplicaState) *atomic.Pointer[messages.ReplicaState] {
	p := &atomic.Pointer[messages.ReplicaState]{}
	if st != nil {
		p.Store(st)
	}
	return p
}

// Ready waits for the metadata and for every replica to open or fail.
func TestReady(t *testing.T) {
	m := New(Build{Version: "v", Commit: "c"}, Options{PartitionLabels: true})
	if ok, why := m.Ready(); ok || !strings.Contains(why, "metadata") {
		t.Fatalf("before any state: %v %q", ok, why)
	}
	opening := status(nil)
	m.Publish(&State{Meta: &cluster.Snapshot{}, Replicas: []*atomic.Pointer[messages.ReplicaState]{status(&messages.ReplicaState{}), opening}})
	if ok, why := m.Ready(); ok || !strings.Contains(why, "1 replica is still opening") {
		t.Fatalf("with a replica opening: %v %q", ok, why)
	}
	opening.Store(&messages.ReplicaState{Error: messages.ErrorCode_STORAGE_ERROR}) // offline counts as reported
	if ok, why := m.Ready(); !ok {
		t.Fatalf("all replicas opened or offline: %q", why)
	}
	var nilBroker *Broker
	if ok, _ := nilBroker.Ready(); ok {
		t.Fatal("a nil Broker is ready")
	}
}

// The state gauges follow the published metadata: partitions led, under
// replicated and under min ISR here; offline ones only on the controller;
// per-partition series only from the leader.
func TestStateGauges(t *testing.T) {
	m := New(Build{}, Options{PartitionLabels: true})
	ps := func(topic string, p, leader int32, isr, replicas []int32) (cluster.TopicPartition, cluster.Partition) {
		return cluster.TopicPartition{Topic: topic, Partition: p},
			cluster.Partition{State: &messages.PartitionState{Topic: topic, Partition: p, Leader: leader, Isr: isr, Replicas: replicas}}
	}
	meta := &cluster.Snapshot{Topics: map[string]*messages.TopicRecord{"a": {}, "b": {}}, Partitions: map[cluster.TopicPartition]cluster.Partition{}}
	for _, x := range []struct {
		topic         string
		p, leader     int32
		isr, replicas []int32
	}{
		{"a", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}}, // led, healthy
		{"a", 1, 1, []int32{1}, []int32{1, 2, 3}},       // led, under-replicated and under min ISR 2
		{"a", 2, 2, []int32{2, 1}, []int32{2, 1, 3}},    // followed
		{"b", 0, -1, []int32{3}, []int32{3, 1}},         // offline
	} {
		tp, part := ps(x.topic, x.p, x.leader, x.isr, x.replicas)
		meta.Partitions[tp] = part
	}
	// a-1 is moving (3 added); a-3, preferred here, is led by 2.
	meta.Partitions[cluster.TopicPartition{Topic: "a", Partition: 1}].State.AddingReplicas = []int32{3}
	tp, part := ps("a", 3, 2, []int32{2, 1}, []int32{1, 2})
	meta.Partitions[tp] = part
	replicas := []*atomic.Pointer[messages.ReplicaState]{
		status(&messages.ReplicaState{Topic: "a", Partition: 0, Leader: true, HighWatermark: 7, LogEndOffset: 9, SizeBytes: 100}),
		status(&messages.ReplicaState{Topic: "a", Partition: 2, HighWatermark: 3}),
		status(&messages.ReplicaState{Topic: "b", Partition: 0, Error: messages.ErrorCode_STORAGE_ERROR}),
	}
	m.Publish(&State{BrokerID: 1, LiveBrokers: 3, Unreachable: 1, Meta: meta, MinISR: func(string) int { return 2 }, Replicas: replicas})
	want := `
# HELP sluice_partitions_led Partitions this broker leads.
# TYPE sluice_partitions_led gauge
sluice_partitions_led 2
# HELP sluice_partitions_under_replicated Partitions led by this broker whose ISR is smaller than their replica set.
# TYPE sluice_partitions_under_replicated gauge
sluice_partitions_under_replicated 1
# HELP sluice_partitions_under_min_isr Partitions led by this broker whose ISR is smaller than min.insync.replicas: acks=all produce fails.
# TYPE sluice_partitions_under_min_isr gauge
sluice_partitions_under_min_isr 1
# HELP sluice_partitions_followed Partitions this broker hosts a follower replica of.
# TYPE sluice_partitions_followed gauge
sluice_partitions_followed 2
# HELP sluice_partitions_reassigning Partitions led by this broker that are moving to another replica set.
# TYPE sluice_partitions_reassigning gauge
sluice_partitions_reassigning 1
# HELP sluice_preferred_leader_imbalance Partitions this broker is the preferred leader of (their first replica) that another broker leads.
# TYPE sluice_preferred_leader_imbalance gauge
sluice_preferred_leader_imbalance 1
# HELP sluice_brokers_unreachable Live brokers this broker has not heard from for the broker session timeout (fenced, on the controller's broker).
# TYPE sluice_brokers_unreachable gauge
sluice_brokers_unreachable 1
# HELP sluice_partitions_offline Partitions without a leader, exported by the active controller (0 elsewhere), so that sum() is the cluster's count.
# TYPE sluice_partitions_offline gauge
sluice_partitions_offline 0
# HELP sluice_replicas_offline Replicas on this broker whose log failed (storage error); they neither lead nor follow.
# TYPE sluice_replicas_offline gauge
sluice_replicas_offline 1
# HELP sluice_partition_high_watermark The partition's high watermark: consumers read below it. Exported by the leader.
# TYPE sluice_partition_high_watermark gauge
sluice_partition_high_watermark{partition="0",topic="a"} 7
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "sluice_partitions_led", "sluice_partitions_under_replicated",
		"sluice_partitions_under_min_isr", "sluice_partitions_followed", "sluice_partitions_offline", "sluice_replicas_offline",
		"sluice_partition_high_watermark", "sluice_partitions_reassigning", "sluice_preferred_leader_imbalance", "sluice_brokers_unreachable"); err != nil {
		t.Fatal(err)
	}
	m.Publish(&State{BrokerID: 1, Controller: true, Meta: meta})
	if n, err := testutil.GatherAndCount(m.Registry, "sluice_partition_high_watermark"); err != nil || n != 0 {
		t.Fatalf("HW series without replicas: %d %v", n, err)
	}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP sluice_partitions_offline Partitions without a leader, exported by the active controller (0 elsewhere), so that sum() is the cluster's count.
# TYPE sluice_partitions_offline gauge
sluice_partitions_offline 1
`), "sluice_partitions_offline"); err != nil {
		t.Fatal(err)
	}
}

// The mailbox statistics count user messages while they wait, and nothing
// for system messages.
func TestMailboxStats(t *testing.T) {
	m := New(Build{}, Options{})
	s := &mailboxStats{m: m}
	s.MessagePosted("a")
	s.MessagePosted("b")
	s.MessagePosted(&actor.Stop{})
	if d := testutil.ToFloat64(m.c.mailboxDepth); d != 2 {
		t.Fatalf("depth %v after two user messages", d)
	}
	time.Sleep(time.Millisecond)
	s.MessageReceived("a")
	s.MessageReceived(&actor.Stop{})
	s.MessageReceived("b")
	if d := testutil.ToFloat64(m.c.mailboxDepth); d != 0 {
		t.Fatalf("depth %v after both were handled", d)
	}
	if n := testutil.CollectAndCount(m.c.mailboxSeconds); n != 1 {
		t.Fatalf("wait histogram series: %d", n)
	}
}

// Every method counts nothing, and fails nothing, on a nil Broker.
func TestNilBroker(t *testing.T) {
	var m *Broker
	m.Publish(&State{})
	m.Topic("t").Produced(1, 2)
	m.Topic("t").Fetched(3)
	m.Request("x")
	m.RequestError("x", messages.ErrorCode_NOT_LEADER)
	m.Acknowledged(true, time.Second)
	m.Fsynced(time.Second)
	m.GroupCommit(1)
	m.ReplicatedIn(1)
	m.ReplicatedOut(1)
	m.Elected(1)
	m.ISRChanged(1, 2)
	m.KafkaRequest("Produce", 0, time.Second)
	m.Listener("x", nil, nil)
	m.Guard(nil)
	_ = m.Mailbox()
}
