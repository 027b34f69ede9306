package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/client"
)

// reassigned reports whether topic-p has exactly target as its replicas,
// all in sync, and no move in progress.
func (c *testCluster) reassigned(topic string, p int32, target []int32) bool {
	pm := c.partitionState(topic, p)
	if pm == nil || !slices.Equal(pm.Replicas, target) || len(pm.Isr) != len(target) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	moving, err := c.admin.ListPartitionReassignments(ctx, client.ElectionTarget{Topic: topic, Partitions: []int32{p}})
	return err == nil && len(moving) == 0
}

// partitionDirGone reports whether broker id holds no directory of topic-p.
func (c *testCluster) partitionDirGone(id int32, topic string, p int32) bool {
	_, err := os.Stat(filepath.Join(c.brokers[id].Data, "topics", fmt.Sprintf("%s-%d", topic, p)))
	return os.IsNotExist(err)
}

// Moves under a running acks=all producer: a partition whose leader leaves
// (the leader moves to a replica that stays), one grown from two replicas
// to three, both through Sluice's client, and one shrunk to one through
// the Kafka door with franz-go's kadm. Each move completes with the
// target in sync, the brokers that left delete their data, and nothing
// acknowledged is lost or written twice (every replica's log is compared
// at the end). Moves that cannot be made get Kafka's error codes.
func TestReassignmentsUnderLoad(t *testing.T) {
	c := startCluster(t, 3, "--kafka-addr", "127.0.0.1:0")
	const topic = "moves"
	c.createTopic(topic, 3, 2, nil)
	w := startWorkload(t, c, topic, 2)
	hw := startHWMonitor(c, topic)
	w.waitAcks(c, 2000)

	targets := map[int32][]int32{}
	var moves []client.Reassignment
	for p := int32(0); p < 3; p++ {
		pm := c.partitionState(topic, p)
		var missing int32
		for _, id := range c.ids() {
			if !slices.Contains(pm.Replicas, id) {
				missing = id
			}
		}
		var target []int32
		switch p {
		case 0: // the leader leaves for the broker without a replica
			var stays int32
			for _, id := range pm.Replicas {
				if id != pm.Leader {
					stays = id
				}
			}
			target = []int32{missing, stays}
		case 1: // RF 2 -> 3
			target = append(slices.Clone(pm.Replicas), missing)
		case 2: // RF 2 -> 1, without its leader
			for _, id := range pm.Replicas {
				if id != pm.Leader {
					target = []int32{id}
				}
			}
		}
		t.Logf("partition %d: replicas %v leader %d -> %v", p, pm.Replicas, pm.Leader, target)
		targets[p] = target
		moves = append(moves, client.Reassignment{Topic: topic, Partition: p, Replicas: target})
	}
	before := map[int32][]int32{}
	for p := int32(0); p < 3; p++ {
		before[p] = c.partitionState(topic, p).Replicas
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results, err := c.admin.AlterPartitionReassignments(ctx, moves[:2]...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("partition %d: %v", r.Partition, r.Err)
		}
	}
	adm := kadm.NewClient(newKgo(t, strings.Join(kafkaSeeds(t, c), ",")))
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 2, targets[2])
	req.Assign(topic, 9, []int32{1})         // no such partition
	req.Assign(topic+"-none", 0, []int32{1}) // no such topic
	kres, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		p   int32
		err error
	}{{2, nil}, {9, kerr.UnknownTopicOrPartition}} {
		if got := kres[topic][want.p].Err; !errors.Is(got, want.err) {
			t.Errorf("kadm: partition %d: %v, want %v", want.p, got, want.err)
		}
	}
	if got := kres[topic+"-none"][0].Err; !errors.Is(got, kerr.UnknownTopicOrPartition) {
		t.Errorf("kadm: a topic that does not exist: %v", got)
	}
	for p := int32(0); p < 3; p++ {
		c.waitFor(fmt.Sprintf("partition %d on %v", p, targets[p]), time.Minute, func() bool { return c.reassigned(topic, p, targets[p]) })
		for _, id := range before[p] {
			if !slices.Contains(targets[p], id) {
				c.waitFor(fmt.Sprintf("broker %d deleting its replica of partition %d", id, p), 30*time.Second,
					func() bool { return c.partitionDirGone(id, topic, p) })
			}
		}
	}
	// Kafka's DescribeLogDirs shows each partition's data where it is now.
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		for _, id := range c.ids() {
			_, found := dirs[id].Sorted()[0].Topics.Lookup(topic, p)
			if want := slices.Contains(targets[p], id); found != want {
				t.Errorf("DescribeLogDirs of broker %d lists partition %d: %v, want %v", id, p, found, want)
			}
		}
	}
	if d := dirs[1].Sorted()[0]; d.Dir == "" || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
		t.Errorf("broker 1's log dir: %+v", d)
	}

	// Moves that cannot be made, each with its code and a reason.
	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign(topic, 0, []int32{1, 7}) // not a live broker
	bad.Assign(topic, 1, []int32{1, 1}) // a broker twice
	bad.Assign(topic, 2, []int32{})     // no replicas
	kres, err = adm.AlterPartitionAssignments(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if r := kres[topic][p]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) || r.ErrMessage == "" {
			t.Errorf("kadm: an invalid move of partition %d: %v %q", p, r.Err, r.ErrMessage)
		}
	}
	var cancelNone kadm.AlterPartitionAssignmentsReq
	cancelNone.CancelAssign(topic, 0)
	if kres, err = adm.AlterPartitionAssignments(ctx, cancelNone); err != nil || !errors.Is(kres[topic][0].Err, kerr.NoReassignmentInProgress) {
		t.Errorf("kadm: cancelling a partition that is not moving: %v %v", err, kres[topic][0].Err)
	}
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
	if err != nil || len(listed[topic]) != 0 {
		t.Errorf("kadm lists moves after they completed: %v %v", listed, err)
	}

	w.waitAcks(c, 2000)
	rep := c.verify(topic, 3, w, hw)
	if rep.acked < 4000 {
		t.Fatalf("only %d records acknowledged", rep.acked)
	}
}

// replicasOn counts the replicas each broker hosts and the partitions it
// leads, from the metadata.
func (c *testCluster) replicasOn(topic string) (hosted, led map[int32]int) {
	hosted, led = map[int32]int{}, map[int32]int{}
	md, err := c.metadata(topic)
	if err != nil || len(md.Topics) != 1 {
		return nil, nil
	}
	for _, p := range md.Topics[0].Partitions {
		for _, id := range p.Replicas {
			hosted[id]++
		}
		led[p.Leader]++
	}
	return hosted, led
}

// Growing a cluster and shrinking it, with the CLI, under a running
// acks=all producer: after a fourth broker joins, `cluster rebalance`
// copies a quarter of the replicas onto it (its dry run says so first)
// and every broker ends with as many; `cluster drain` then empties a
// broker that leads partitions and says it can be stopped, and it is.
// Nothing acknowledged is lost or written twice.
func TestGrowAndDrainWithTheCLI(t *testing.T) {
	c := startCluster(t, 3)
	const topic = "grow"
	c.createTopic(topic, 6, 2, nil)
	w := startWorkload(t, c, topic, 2)
	hw := startHWMonitor(c, topic)
	w.waitAcks(c, 1000)

	c.addBroker(4)
	c.waitFor("broker 4 registered", time.Minute, func() bool {
		md, err := c.metadata()
		return err == nil && len(md.Brokers) == 4
	})
	b := c.brokers[1]
	var plan struct {
		Moves  []move `json:"moves"`
		Copies int    `json:"replicas_copied"`
	}
	if err := json.Unmarshal([]byte(b.cli("", "cluster", "rebalance", "--dry-run", "--format", "json")), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Copies != 3 {
		t.Fatalf("the rebalance plan copies %d replicas, want 3 of 12 (a quarter) onto broker 4: %+v", plan.Copies, plan.Moves)
	}
	if hosted, _ := c.replicasOn(topic); hosted[4] != 0 {
		t.Fatalf("a dry run moved replicas: %v", hosted)
	}
	out := b.cli("", "cluster", "rebalance")
	if !strings.Contains(out, fmt.Sprintf("%d of %d partitions moved", len(plan.Moves), len(plan.Moves))) {
		t.Fatalf("rebalance said:\n%s", out)
	}
	hosted, _ := c.replicasOn(topic)
	for id := int32(1); id <= 4; id++ {
		if hosted[id] != 3 {
			t.Fatalf("after the rebalance brokers host %v replicas, want 3 each\n%s", hosted, out)
		}
	}
	w.waitAcks(c, 1000)

	victim := int32(1)
	if _, led := c.replicasOn(topic); led[victim] == 0 {
		t.Fatalf("broker %d leads nothing to move: %v", victim, led)
	}
	out = c.brokers[2].cli("", "cluster", "drain", fmt.Sprint(victim))
	if !strings.Contains(out, fmt.Sprintf("broker %d holds no replicas and leads nothing: it can be stopped", victim)) {
		t.Fatalf("drain said:\n%s", out)
	}
	if hosted, led := c.replicasOn(topic); hosted[victim] != 0 || led[victim] != 0 {
		t.Fatalf("after the drain broker %d hosts %d replicas and leads %d partitions", victim, hosted[victim], led[victim])
	}
	c.waitFor(fmt.Sprintf("broker %d deleting its replicas", victim), 30*time.Second, func() bool {
		dirs, _ := filepath.Glob(filepath.Join(c.brokers[victim].Data, "topics", topic+"-*"))
		return len(dirs) == 0
	})
	c.brokers[victim].stop()
	w.waitAcks(c, 1000)
	c.verify(topic, 6, w, hw)
}

// The commands that move partitions refuse a malformed command line with
// exit code 2 and say what they want, before reaching any broker.
func TestMoveCommandsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "reassign"}, "want at least one TOPIC:PARTITION=BROKER"},
		{[]string{"cluster", "reassign", "t:x=1"}, `"t:x=1": want TOPIC:PARTITION=BROKER`},
		{[]string{"cluster", "reassign", "t:0=1,a"}, `"t:0=1,a": want TOPIC:PARTITION=BROKER`},
		{[]string{"cluster", "reassign", "t:0"}, `"t:0": want TOPIC:PARTITION=BROKER`},
		{[]string{"cluster", "reassign", "--cancel", "t:0=1"}, `"t:0=1": want TOPIC:PARTITION`},
		{[]string{"cluster", "drain"}, "want the id of the broker to drain"},
		{[]string{"cluster", "drain", "x"}, `"x": want a broker id`},
		{[]string{"cluster", "rebalance", "extra"}, `unexpected argument "extra"`},
		{[]string{"cluster", "rebalance", "--throttle", "-1"}, "--throttle -1: want bytes per second"},
		{[]string{"cluster", "reassign", "t:0=1", "--throttle", "-5"}, "--throttle -5: want bytes per second"},
		{[]string{"cluster", "move"}, `unknown command "move"`},
		{[]string{"topic", "elect-leaders", "t:x"}, `"t:x": want TOPIC or TOPIC:P,P,...`},
	} {
		_, stderr, code := runCLI(t, "", append(tc.args, "--broker", "127.0.0.1:1")...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// replicaSize asks broker id for the bytes its replica of topic-p holds
// (-1: none, or no answer).
func (c *testCluster) replicaSize(id int32, topic string, p int32) int64 {
	if rs := c.replicaState(id, topic, p); rs != nil {
		return rs.SizeBytes
	}
	return -1
}

// moving lists the moves in progress of topic-0 with the CLI.
func (c *testCluster) moving(via int32, topic string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(c.brokers[via].cli("", "cluster", "reassignments", "--format", "json")), "\n") {
		if line == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			c.t.Fatalf("%q: %v", line, err)
		}
		if m["topic"] == topic {
			out = append(out, m)
		}
	}
	return out
}

// A throttled move copies no faster than its throttle; it survives a
// kill -9 of the controller (kept in the metadata store) and is then
// cancelled, the added replica's data deleted. Moved again, it survives
// a kill -9 of the partition's leader (the new leader feeds the added
// replica) and completes. Every record acknowledged with acks=all is read
// back.
func TestThrottledMoveSurvivesKillsAndCancels(t *testing.T) {
	c := startCluster(t, 3)
	const topic = "slow"
	c.createTopic(topic, 1, 2, nil)
	pm := c.partitionState(topic, 0)
	var added int32
	for _, id := range c.ids() {
		if !slices.Contains(pm.Replicas, id) {
			added = id
		}
	}
	p, err := client.NewProducer(c.seeds(), sharedOpts(), client.Acks(client.AllAcks), client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	value := []byte(strings.Repeat("x", 10_000))
	produce := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := 0; i < n; i++ {
			if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: topic, Value: value}); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(400) // about 4 MB
	size := c.replicaSize(pm.Leader, topic, 0)
	target := fmt.Sprintf("%s:0=%s", topic, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(append(slices.Clone(pm.Replicas), added))), ","), "[]"))
	const rate = 256 << 10

	// Throttled: after 3 s the added replica holds at most 4 s of the
	// rate (the bucket starts with one second's worth) and a batch.
	started := time.Now()
	c.brokers[pm.Leader].cli("", "cluster", "reassign", target, "--throttle", fmt.Sprint(rate), "--no-wait")
	c.waitFor("the added replica copying", 30*time.Second, func() bool { return c.replicaSize(added, topic, 0) > 0 })
	time.Sleep(3 * time.Second)
	copied, elapsed := c.replicaSize(added, topic, 0), time.Since(started)
	if limit := int64(elapsed.Seconds()+1)*rate + 64<<10; copied > limit || copied >= size {
		t.Fatalf("after %v the added replica holds %d of %d bytes; the throttle allows at most %d", elapsed, copied, size, limit)
	}
	t.Logf("throttled to %d B/s: %d of %d bytes copied in %v", rate, copied, size, elapsed.Round(time.Millisecond))
	// The console lists the move.
	moves := tableRows(t, getPage(t, httpAddr(t, c.brokers[pm.Leader]), "/"), "moves-table")
	if len(moves) != 2 || moves[1][0] != topic || moves[1][3] != fmt.Sprintf("[%d]", added) {
		t.Fatalf("the console's moves table: %v", moves)
	}

	// The controller dies mid-move: the next one has the move.
	ctl := c.controller()
	c.brokers[ctl].kill()
	c.brokers[ctl].start()
	via := pm.Replicas[0]
	if via == ctl {
		via = pm.Replicas[1]
	}
	c.waitFor("the move listed after the controller's kill", time.Minute, func() bool {
		m := c.moving(via, topic)
		return len(m) == 1 && fmt.Sprint(m[0]["adding"]) == fmt.Sprintf("[%d]", added)
	})
	out := c.brokers[via].cli("", "cluster", "reassign", "--cancel", topic+":0")
	if !strings.Contains(out, topic+" 0: move cancelled") {
		t.Fatalf("cancel said %q", out)
	}
	c.waitFor("the partition back on its replicas, the added one's data gone", time.Minute, func() bool {
		st := c.partitionState(topic, 0)
		return st != nil && len(st.Replicas) == 2 && !slices.Contains(st.Replicas, added) && c.partitionDirGone(added, topic, 0)
	})
	produce(50)
	// The killed controller's broker back in the ISR, so the next kill
	// leaves an in-sync replica to lead.
	c.waitFor("both replicas in sync", time.Minute, func() bool {
		st := c.partitionState(topic, 0)
		return st != nil && len(st.Isr) == 2
	})

	// Moved again; the leader dies mid-move.
	c.brokers[via].cli("", "cluster", "reassign", target, "--throttle", fmt.Sprint(rate), "--no-wait")
	c.waitFor("the added replica copying", 30*time.Second, func() bool { return c.replicaSize(added, topic, 0) > 0 })
	leader := c.leaderOf(topic, 0)
	c.brokers[leader].kill()
	produce(50) // to the new leader
	c.brokers[leader].start()
	want := append(slices.Clone(pm.Replicas), added)
	c.waitFor("the move completed after the leader's kill", 2*time.Minute, func() bool {
		st := c.partitionState(topic, 0)
		return st != nil && sameMembers(st.Replicas, want) && len(st.Isr) == 3 && len(c.moving(via, topic)) == 0
	})
	if got := len(c.consumeAll(topic, 0)); got != 500 {
		t.Fatalf("read back %d records, want the 500 acknowledged", got)
	}
}

func sameMembers(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
