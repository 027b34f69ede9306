package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
)

// brokerMustFail runs `sluice args...` (a broker that must refuse to
// start) and returns its standard error once it has exited non-zero.
func brokerMustFail(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sluice %v did not exit within 60 s:\n%s", args, out.String())
	}
	if err == nil {
		t.Fatalf("sluice %v started and exited 0:\n%s", args, out.String())
	}
	if strings.Contains(out.String(), "sluice broker ready") {
		t.Fatalf("sluice %v served before it failed:\n%s", args, out.String())
	}
	return out.String()
}

// partitionDirs lists the partition directories of topic in a data directory.
func partitionDirs(t *testing.T, data, topic string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(data, "topics", topic+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return matches
}

// A metadata store that lost everything under a running cluster (a -dev
// Consul agent restarted) must not make any broker delete its data: the
// brokers refuse to act on a store without their cluster id, say so, keep
// serving what they have, and a restarted broker refuses to start against
// it instead of starting a new, empty cluster over its partitions.
func TestConsulWipedUnderRunningCluster(t *testing.T) {
	c := startCluster(t, 3)
	c.createTopic("kept", 3, 3, nil)
	for p := int32(0); p < 3; p++ {
		produceN(t, c.seeds(), "kept", p, 50)
	}
	c.waitFullyReplicated("kept", time.Minute)
	before := c.replicaStates("kept")
	if err := c.consul.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	for _, id := range c.ids() {
		b := c.brokers[id]
		c.waitFor(fmt.Sprintf("broker %d reporting the foreign store", id), time.Minute, func() bool {
			return strings.Contains(b.logs.String(), "the metadata store does not hold this broker's cluster")
		})
	}
	// Every replica is still there, with everything it had.
	after := c.replicaStates("kept")
	for _, id := range c.ids() {
		if len(after[id]) != 3 {
			t.Fatalf("broker %d holds %d replicas of kept after the wipe, want 3", id, len(after[id]))
		}
		for i, rs := range after[id] {
			if rs.LogEndOffset != before[id][i].LogEndOffset || rs.LogEndOffset != 50 {
				t.Fatalf("broker %d partition %d: LEO %d after the wipe, %d before", id, rs.Partition, rs.LogEndOffset, before[id][i].LogEndOffset)
			}
		}
		if strings.Contains(c.brokers[id].logs.String(), "removed partition") || strings.Contains(c.brokers[id].logs.String(), "removing the data") {
			t.Fatalf("broker %d removed data:\n%s", id, grepLines(c.brokers[id].logs.String(), "remov"))
		}
	}
	// The data still reads back from the leaders.
	for p := int32(0); p < 3; p++ {
		if n := len(c.consumeAll("kept", p)); n != 50 {
			t.Fatalf("partition %d reads %d records after the wipe, want 50", p, n)
		}
	}
	// A broker restarted now refuses to start, and says why.
	b := c.brokers[1]
	b.stop()
	out := brokerMustFail(t, b.args...)
	if !strings.Contains(out, "the metadata store has no cluster id") {
		t.Fatalf("refusal does not say why:\n%s", out)
	}
	// So does one pointed at another cluster name by mistake.
	typo := slices.Clone(b.args)
	typo[slices.Index(typo, "--cluster")+1] = c.name + "-typo"
	if out := brokerMustFail(t, typo...); !strings.Contains(out, "the metadata store has no cluster id") {
		t.Fatalf("refusal with a wrong --cluster does not say why:\n%s", out)
	}
	if dirs := partitionDirs(t, b.Data, "kept"); len(dirs) != 3 {
		t.Fatalf("broker 1's data directory holds %v after the refused starts", dirs)
	}
	t.Logf("refused: %s", strings.TrimSpace(grepLines(out, "cluster id")))
}

// The embedded broker's metadata is in its data directory: if it is lost
// while the partitions stay, the broker refuses to start rather than
// start empty and delete them.
func TestEmbeddedMetadataLostRefusesToStart(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "precious", 1, nil)
	produceN(t, b.Addr, "precious", 0, 20)
	b.stop()
	if err := os.RemoveAll(filepath.Join(b.Data, "meta")); err != nil {
		t.Fatal(err)
	}
	out := brokerMustFail(t, b.args...)
	if !strings.Contains(out, "the metadata store has no cluster id") {
		t.Fatalf("refusal does not say why:\n%s", out)
	}
	if dirs := partitionDirs(t, b.Data, "precious"); len(dirs) != 1 {
		t.Fatalf("data directory holds %v after the refused start", dirs)
	}
}

// Two broker processes with one id: the second refuses to start while the
// first is alive, and the first goes on as that broker.
func TestDuplicateBrokerIDRefused(t *testing.T) {
	c := startCluster(t, 2)
	first := c.brokers[2]
	dup := []string{"broker", "--data", t.TempDir(), "--addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--consul", c.consul.Addr(), "--cluster", c.name, "--id", "2", "--check-ttl", checkTTL, "--http", "127.0.0.1:0"}
	start := time.Now()
	out := brokerMustFail(t, dup...)
	if !strings.Contains(out, "broker id in use by another live broker") || !strings.Contains(out, first.Addr) {
		t.Fatalf("refusal does not name the live broker %s:\n%s", first.Addr, out)
	}
	t.Logf("refused after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(grepLines(out, "in use")))
	md, err := c.metadata()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(md.Brokers, func(b *messages.BrokerInfo) bool { return b.Id == 2 })
	if i < 0 || md.Brokers[i].Address != first.Addr {
		t.Fatalf("broker 2 is %v after the refused start, want %s", md.Brokers, first.Addr)
	}
	// The same data directory as a running broker: refused at once.
	same := []string{"broker", "--data", first.Data, "--addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--consul", c.consul.Addr(), "--cluster", c.name, "--id", "3", "--check-ttl", checkTTL, "--http", "127.0.0.1:0"}
	if out := brokerMustFail(t, same...); !strings.Contains(out, "data directory in use by another process") {
		t.Fatalf("second broker on a used data directory:\n%s", out)
	}
	if !first.alive() {
		t.Fatal("the first broker died")
	}
}

// A follower whose data directory is wiped and that restarts at once (a
// replaced disk) leaves the ISR and is never elected while it is behind:
// the leader is killed right after, and the partition waits for it
// instead of electing the empty follower. No acknowledged record is lost.
func TestFaultWipedFollowerNeverLeads(t *testing.T) {
	c, w, hw, st := startPairCluster(t)
	leader, follower := st.Leader, otherReplica(st, st.Leader)
	c.brokers[follower].kill9()
	if err := os.RemoveAll(c.brokers[follower].Data); err != nil {
		t.Fatal(err)
	}
	c.brokers[follower].start()
	c.brokers[leader].kill9()
	// From now until the follower is back in the ISR, it must never lead.
	var mu sync.Mutex
	var bad []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// The wiped replica itself says whether it leads.
			for _, rs := range c.replicaStates(pairTopic)[follower] {
				if rs.Leader {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("the wiped follower %d leads at epoch %d with LEO %d", follower, rs.LeaderEpoch, rs.LogEndOffset))
					mu.Unlock()
				}
			}
		}
	}()
	c.waitFor("the partition offline after its leader died", time.Minute, func() bool {
		pm := c.partitionState(pairTopic, 0)
		return pm != nil && pm.Leader != leader
	})
	// Decided once the controller counts the two live brokers (the wiped
	// follower and the third): offline, waiting for the leader, whichever
	// of the ISR it kept (the follower only if it saw the leader die first,
	// and then the follower, back on a new disk, may not lead).
	c.waitControllerCounts(2)
	if pm := c.partitionState(pairTopic, 0); pm.Leader != -1 || len(pm.Isr) != 1 {
		t.Fatalf("after the leader died: leader %d, ISR %v; want offline", pm.Leader, pm.Isr)
	}
	c.brokers[leader].start()
	c.waitFor("the follower caught up and back in the ISR", 2*time.Minute, func() bool {
		pm := c.partitionState(pairTopic, 0)
		return pm != nil && pm.Leader == leader && slices.Contains(pm.Isr, follower)
	})
	close(stop)
	<-done
	if len(bad) > 0 {
		t.Fatal(bad[0])
	}
	w.waitAcks(c, 1000)
	c.verify(pairTopic, 1, w, hw)
}

// Control and replication messages from a process that is not the broker
// they name are refused: a forged ReplicaFetch cannot move the HW past
// what the follower has, a forged AlterPartition or LeaderAndIsr changes
// nothing (and a huge controller epoch does not lock the real controller
// out), and clients cannot write to or delete __consumer_offsets.
func TestForgedControlMessagesRefused(t *testing.T) {
	// A long lag time and TTL: the paused follower stays in the ISR.
	c := startCluster(t, 3, "--replica-lag-time-max", "60s", "--check-ttl", "20s")
	c.createTopic("forged", 1, 2, map[string]string{"min.insync.replicas": "1"})
	st := c.partitionState("forged", 0)
	leader, follower := st.Leader, otherReplica(st, st.Leader)
	leaderAddr := c.brokers[leader].Addr
	produceN(t, c.seeds(), "forged", 0, 5)
	c.waitFullyReplicated("forged", time.Minute)
	code := func(m any) messages.ErrorCode {
		switch r := m.(type) {
		case *messages.ReplicaFetchResponse:
			return r.Error
		case *messages.AlterPartitionResponse:
			return r.Error
		case *messages.LeaderAndIsrResponse:
			return r.Error
		case *messages.ErrorResponse:
			return r.Error
		case *messages.ProduceResponse:
			return r.Error
		case *messages.DeleteTopicsResponse:
			return r.Results[0].Error
		case *messages.CreateTopicsResponse:
			return r.Results[0].Error
		}
		return messages.ErrorCode_NONE
	}
	// AlterPartition (the current ISR, so it would commit), through a broker
	// and straight to the controller (before any broker is paused: the
	// controller may be the follower).
	ctl := c.controller()
	isr := []int32{leader, follower}
	if r := forge(t, leaderAddr, "broker", &messages.AlterPartitionRequest{Topic: "forged", BrokerId: leader,
		LeaderEpoch: st.LeaderEpoch, NewIsr: isr}); code(r) != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
		t.Errorf("forged AlterPartition to a broker answered %v", r)
	}
	if r := forge(t, c.brokers[ctl].Addr, "broker/controller", &messages.AlterPartitionRequest{Topic: "forged", BrokerId: leader,
		LeaderEpoch: st.LeaderEpoch, NewIsr: isr}); code(r) != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
		t.Errorf("forged AlterPartition to the controller answered %v", r)
	}
	if pm := c.partitionState("forged", 0); pm.LeaderEpoch != st.LeaderEpoch {
		t.Fatalf("state after the forged AlterPartitions: %v", pm)
	}
	// The follower stops fetching; acks=1 writes move the LEO, not the HW.
	c.brokers[follower].pause()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.admin.Request(ctx, leaderAddr, &messages.ProduceRequest{Topic: "forged", Acks: 1, Records: rawBatch("a", "b", "c")})
	if err != nil || res.(*messages.ProduceResponse).Error != messages.ErrorCode_NONE {
		t.Fatalf("acks=1 produce: %v %v", res, err)
	}
	hwOf := func() (int64, int64) {
		for _, rs := range c.replicaStates("forged")[leader] {
			return rs.HighWatermark, rs.LogEndOffset
		}
		return -1, -1
	}
	hw, leo := hwOf()
	if hw != 5 || leo != 8 {
		t.Fatalf("HW %d, LEO %d; want 5 and 8 with the follower paused", hw, leo)
	}
	// A ReplicaFetch in the paused follower's name, claiming it has all.
	r := forge(t, leaderAddr, "broker", &messages.ReplicaFetchRequest{Topic: "forged", ReplicaId: follower,
		LeaderEpoch: st.LeaderEpoch, FetchOffset: leo, MaxBytes: 1 << 20})
	if code(r) != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
		t.Errorf("forged ReplicaFetch answered %v", r)
	}
	if hw2, _ := hwOf(); hw2 != hw {
		t.Fatalf("a forged ReplicaFetch moved the HW from %d to %d", hw, hw2)
	}
	// LeaderAndIsr naming the follower as leader: with a huge epoch, and
	// with the real controller's id and epoch.
	md, _ := c.metadata("forged")
	fake := &messages.PartitionState{Topic: "forged", TopicId: md.Topics[0].TopicId, Leader: follower,
		LeaderEpoch: st.LeaderEpoch + 100, Isr: []int32{follower}, PartitionEpoch: 1000, Replicas: st.Replicas}
	for _, epoch := range []int64{1 << 40, 0} {
		req := &messages.LeaderAndIsrRequest{ControllerId: ctl, ControllerEpoch: epoch, States: []*messages.PartitionState{fake}}
		if epoch == 0 {
			// The real controller's epoch: the id and epoch are right, the
			// sender is not the controller.
			req.ControllerEpoch = controllerEpochOf(t, c)
		}
		if r := forge(t, leaderAddr, "broker", req); code(r) != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
			t.Errorf("forged LeaderAndIsr at controller epoch %d answered %v", req.ControllerEpoch, r)
		}
	}
	if pm := c.partitionState("forged", 0); pm.Leader != leader {
		t.Fatalf("leader %d after the forgeries, want %d", pm.Leader, leader)
	}
	for _, rs := range c.replicaStates("forged")[leader] {
		if !rs.Leader || rs.LeaderEpoch != st.LeaderEpoch {
			t.Fatalf("the leader's replica after the forgeries: %v", rs)
		}
	}
	// Clients cannot write to the offsets topic (nor create or delete it, below).
	if r := forge(t, leaderAddr, "broker", &messages.ProduceRequest{Topic: "__consumer_offsets", Acks: 1,
		Records: rawBatch("x")}); code(r) != messages.ErrorCode_INVALID_TOPIC {
		t.Errorf("produce to __consumer_offsets answered %v", r)
	}
	// The real controller is not locked out: once the follower is resumed,
	// killing the leader moves leadership to it, which only a LeaderAndIsr
	// or metadata update from the real controller can do.
	c.brokers[follower].resume()
	// Create and delete go to the controller, which may be the follower
	// that was paused.
	if r := forge(t, leaderAddr, "broker", &messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "__consumer_offsets",
		Partitions: 1}}}); code(r) != messages.ErrorCode_INVALID_TOPIC {
		t.Errorf("create of __consumer_offsets answered %v", r)
	}
	if r := forge(t, leaderAddr, "broker", &messages.DeleteTopicsRequest{Names: []string{"__consumer_offsets"}}); code(r) != messages.ErrorCode_INVALID_TOPIC {
		t.Errorf("delete of __consumer_offsets answered %v", r)
	}
	c.waitFullyReplicated("forged", time.Minute)
	c.brokers[leader].kill9()
	c.waitFor("the follower leading", time.Minute, func() bool {
		for _, rs := range c.replicaStates("forged")[follower] {
			return rs.Leader && rs.LeaderEpoch > st.LeaderEpoch
		}
		return false
	})
	if n := len(c.consumeAll("forged", 0)); n != 8 {
		t.Fatalf("the new leader holds %d records, want 8", n)
	}
}

// controllerEpochOf reads the controller epoch a broker has applied: the
// epoch of the latest LeaderAndIsr it accepted shows in no response, so it
// is taken from Consul directly.
func controllerEpochOf(t *testing.T, c *testCluster) int64 {
	t.Helper()
	kv, _, err := c.consul.Client().KV().Get("sluice/"+c.name+"/controller_epoch", nil)
	if err != nil || kv == nil {
		t.Fatalf("controller epoch: %v", err)
	}
	var epoch int64
	fmt.Sscan(string(kv.Value), &epoch)
	return epoch
}

// A metadata store that stops answering must not stall the data path: a
// request the broker forwards to the controller while Consul is frozen is
// forwarded at once (the controller is known from the metadata), so a
// produce sent right after it is answered first.
func TestFrozenConsulDoesNotStallTheBroker(t *testing.T) {
	c := startCluster(t, 2, "--check-ttl", "20s")
	ctl := c.controller()
	other := int32(1)
	if ctl == 1 {
		other = 2
	}
	c.createTopic("steady", 2, 1, nil)
	var partition int32 = -1
	md, _ := c.metadata("steady")
	for _, pm := range md.Topics[0].Partitions {
		if pm.Leader == other {
			partition = pm.Partition
		}
	}
	if partition < 0 {
		t.Fatalf("no partition of steady on broker %d: %v", other, md.Topics[0].Partitions)
	}
	addr := c.brokers[other].Addr
	produceN(t, addr, "steady", partition, 1)
	if err := c.consul.Pause(); err != nil {
		t.Fatal(err)
	}
	defer c.consul.Resume()
	// One process sends both on one connection, which keeps their order in
	// the broker's mailbox, and reports the order of the answers.
	order := forgeAll(t, addr, "broker",
		&messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "while-frozen", Partitions: 1}}},
		&messages.ProduceRequest{Topic: "steady", Partition: partition, Acks: 1, Records: rawBatch("x")})
	if r, ok := order[0].msg.(*messages.ProduceResponse); !ok || r.Error != messages.ErrorCode_NONE || order[0].index != 1 {
		t.Fatalf("first answer: request %d, %v; want the produce, answered while the create waits on the controller", order[0].index, order[0].msg)
	}
	t.Logf("produce answered %v before the create (%v)", order[1].after-order[0].after, order[1].msg)
}

// A leader whose log turns out corrupt in the middle (a CRC mismatch found
// when a consumer reads old data) stops serving and reports itself to the
// controller, which elects an in-sync follower; restarted, the bad replica
// finds its log corrupt on open, moves it aside, is refilled from the new
// leader and rejoins the ISR. No acknowledged record is lost.
func TestFaultCorruptLeaderLogMovesLeadership(t *testing.T) {
	c := startCluster(t, 3, "--segment-bytes", "65536")
	const topic = "crc"
	c.createTopic(topic, 1, 3, faultConfig)
	hw := startHWMonitor(c, topic)
	w := startWorkload(t, c, topic, 2)
	st := c.partitionState(topic, 0)
	leader := st.Leader
	logDir := filepath.Join(c.brokers[leader].Data, "topics", topic+"-0", "log")
	segments := func() []string {
		m, _ := filepath.Glob(filepath.Join(logDir, "0*"))
		slices.Sort(m)
		return m
	}
	c.waitFor("five segments on the leader", 2*time.Minute, func() bool { return len(segments()) >= 5 })
	// Damage one byte in the middle of the oldest segment.
	first := segments()[0]
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(first, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[len(data)/2] ^ 0xff}, int64(len(data)/2)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// A consumer reads from the start: the leader finds the damage.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found := false
	for off := int64(0); off < 2000 && !found; off += 100 {
		res, err := c.admin.Request(ctx, c.brokers[leader].Addr, &messages.FetchRequest{Topic: topic, Offset: off, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
		if err == nil {
			r := res.(*messages.FetchResponse)
			found = r.Error == messages.ErrorCode_CORRUPT_RECORD
		}
	}
	if !found {
		t.Fatal("no fetch of the oldest segment found the damaged byte")
	}
	c.waitFor("another in-sync replica leading", time.Minute, func() bool {
		pm := c.partitionState(topic, 0)
		return pm != nil && pm.Leader >= 0 && pm.Leader != leader && !slices.Contains(pm.Isr, leader)
	})
	if !strings.Contains(c.brokers[leader].logs.String(), "reporting the replica offline") {
		t.Fatal("the corrupt leader did not report itself offline")
	}
	w.waitAcks(c, 2000)
	// Restarted, the replica finds the damage on open and is refilled.
	c.brokers[leader].kill9()
	c.brokers[leader].start()
	c.waitFor("the repaired replica back in the ISR", 2*time.Minute, func() bool {
		pm := c.partitionState(topic, 0)
		return pm != nil && slices.Contains(pm.Isr, leader)
	})
	if kept, _ := filepath.Glob(filepath.Join(c.brokers[leader].Data, "topics", topic+"-0", "log.corrupt-*")); len(kept) != 1 {
		t.Fatalf("corrupt log kept at %v, want one directory", kept)
	}
	w.waitAcks(c, 2000)
	c.verify(topic, 1, w, hw)
}
