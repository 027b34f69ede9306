package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// The fault tests run acks=all producers against RF=3 topics with
// min.insync.replicas=2 on three broker processes and a real Consul agent,
// then check (verify): every acknowledged record at its acknowledged
// offset, no offset acknowledged for two values, every replica's log equal
// to the leader's below its HW, and no replica's HW ever going back.

const faultTopic = "faults"

var faultConfig = map[string]string{"min.insync.replicas": "2"}

func startFaultCluster(t *testing.T) (*testCluster, *workload, *hwMonitor) {
	t.Helper()
	c := startCluster(t, 3)
	c.createTopic(faultTopic, 3, 3, faultConfig)
	hw := startHWMonitor(c, faultTopic)
	w := startWorkload(t, c, faultTopic, 2)
	w.waitAcks(c, 2000)
	return c, w, hw
}

// 1. kill -9 the leader mid-stream: a follower from the ISR takes over; the
// old leader restarts and truncates whatever it had that was not committed.
func TestFaultLeaderKilled(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	leader := c.leaderOf(faultTopic, 0)
	before := c.partitionState(faultTopic, 0)
	killed := time.Now()
	c.brokers[leader].kill9()
	c.probeProduce(faultTopic, 0)
	t.Logf("failover of partition 0: %v from kill -9 of broker %d to the first acknowledged produce on the new leader",
		time.Since(killed).Round(time.Millisecond), leader)
	after := c.partitionState(faultTopic, 0)
	if after.Leader == leader || !slices.Contains(before.Isr, after.Leader) || after.LeaderEpoch <= before.LeaderEpoch {
		t.Fatalf("new leader %d (epoch %d) after %d died (epoch %d, ISR %v)", after.Leader, after.LeaderEpoch, leader, before.LeaderEpoch, before.Isr)
	}
	w.waitAcks(c, 2000)
	if w.ledger.acksSince(killed) == 0 {
		t.Fatal("nothing acknowledged after the kill")
	}
	c.brokers[leader].start()
	w.waitAcks(c, 2000)
	c.verify(faultTopic, 3, w, hw)
}

// 2. kill -9 a follower: it leaves the ISR; restarted, it catches up and
// rejoins.
func TestFaultFollowerKilled(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	leader := c.leaderOf(faultTopic, 0)
	st := c.partitionState(faultTopic, 0)
	var follower int32
	for _, id := range st.Replicas {
		if id != leader {
			follower = id
		}
	}
	c.brokers[follower].kill9()
	c.waitFor("ISR without the dead follower", 30*time.Second, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && !slices.Contains(pm.Isr, follower) && len(pm.Isr) == 2
	})
	w.waitAcks(c, 2000) // min.insync.replicas=2 still holds with two
	c.brokers[follower].start()
	c.waitFor("the follower back in the ISR", time.Minute, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && slices.Contains(pm.Isr, follower)
	})
	w.waitAcks(c, 2000)
	c.verify(faultTopic, 3, w, hw)
}

// 3. SIGSTOP a follower past the lag time, then SIGCONT: it is dropped from
// the ISR and re-added once it has caught up. The lag time (1 s) is far
// below the health-check TTL (15 s), so the leader's lag check drops the
// follower while Consul still counts its broker alive.
func TestFaultFollowerPaused(t *testing.T) {
	c := startCluster(t, 3, "--replica-lag-time-max", "1s", "--check-ttl", "15s")
	c.createTopic(faultTopic, 3, 3, faultConfig)
	hw := startHWMonitor(c, faultTopic)
	w := startWorkload(t, c, faultTopic, 2)
	w.waitAcks(c, 2000)
	leader, controller := c.leaderOf(faultTopic, 0), c.controller()
	var follower int32
	for _, id := range c.partitionState(faultTopic, 0).Replicas {
		// Not the controller: a paused controller cannot commit the
		// leader's ISR change until Consul replaces it.
		if id != leader && id != controller {
			follower = id
		}
	}
	paused := time.Now()
	c.brokers[follower].pause()
	c.waitFor("the paused follower out of the ISR", 30*time.Second, func() bool {
		md, err := c.metadata(faultTopic)
		if err != nil || len(md.Topics) != 1 {
			return false
		}
		if !slices.ContainsFunc(md.Brokers, func(b *messages.BrokerInfo) bool { return b.Id == follower }) {
			t.Fatalf("broker %d left the cluster before the leader's lag check dropped it from the ISR", follower)
		}
		for _, pm := range md.Topics[0].Partitions {
			if pm.Partition == 0 {
				return !slices.Contains(pm.Isr, follower)
			}
		}
		return false
	})
	t.Logf("ISR shrank %v after the follower stopped", time.Since(paused).Round(time.Millisecond))
	w.waitAcks(c, 1000) // two in-sync replicas still meet min.insync.replicas
	w.waitAcks(c, 1000)
	c.brokers[follower].resume()
	c.waitFor("the resumed follower back in the ISR", time.Minute, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && slices.Contains(pm.Isr, follower) && len(pm.Isr) == 3
	})
	w.waitAcks(c, 1000)
	c.verify(faultTopic, 3, w, hw)
}

// 4a. Two leader changes in quick succession (KIP-279): the first new
// leader dies right after its election, before the old leader is back.
func TestFaultTwoQuickLeaderChanges(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	epoch := c.partitionState(faultTopic, 0).LeaderEpoch
	first := c.leaderOf(faultTopic, 0)
	c.brokers[first].kill9()
	var second int32
	c.waitFor("a second leader", 30*time.Second, func() bool {
		second = c.leaderOf(faultTopic, 0)
		return second > 0 && second != first
	})
	c.brokers[second].kill9()
	// The third replica leads alone: below min.insync.replicas, producers
	// are refused (NOT_ENOUGH_REPLICAS) and retry.
	c.waitFor("a third leader", 30*time.Second, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && pm.Leader != first && pm.Leader != second && pm.LeaderEpoch >= epoch+2
	})
	c.brokers[first].start()
	c.brokers[second].start()
	c.waitFor("all replicas back in the ISR", time.Minute, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && len(pm.Isr) == 3
	})
	w.waitAcks(c, 2000)
	c.verify(faultTopic, 3, w, hw)
}

// 4b. KIP-101 scenario 2: both replicas of an RF=2 topic crash and the one
// with the shorter log comes back first. The follower dies first and the
// leader writes on alone (no acks=all can complete without the follower),
// then the leader dies. Which of them the ISR keeps depends on which death
// the controller sees first: the follower's (then the ISR keeps the leader,
// and the partition waits for it) or the leader's (then the follower, still
// counted alive and in sync, is elected; it leads on once it is back on its
// data directory, and the old leader truncates its unreplicated suffix).
// Either way nothing acknowledged is lost and the two logs agree.
func TestFaultBothReplicasCrashShorterFirst(t *testing.T) {
	c, w, hw, st := startPairCluster(t, "--replica-lag-time-max", "60s")
	leader, follower := st.Leader, otherReplica(st, st.Leader)
	c.brokers[follower].kill9()
	// Whatever the follower had, the leader had too when it died: once the
	// leader's LEO passes what it was then, the leader's log is longer. The
	// workload's requests are all stuck waiting for the dead follower, so
	// one more goes straight to the leader, which writes it and waits too.
	leoAtKill := c.replicaLEO(leader, pairTopic, 0)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = c.admin.Request(ctx, c.brokers[leader].Addr, &messages.ProduceRequest{Topic: pairTopic, Acks: -1, Records: rawBatch("unreplicated")})
	}()
	c.waitFor("the leader writing past the dead follower", 30*time.Second, func() bool {
		return c.replicaLEO(leader, pairTopic, 0) > leoAtKill
	})
	c.brokers[leader].kill9()
	c.brokers[follower].start()
	c.waitFor("the leader's death seen", time.Minute, func() bool {
		pm := c.partitionState(pairTopic, 0)
		return pm != nil && pm.Leader != leader
	})
	c.waitControllerCounts(2)
	pm := c.partitionState(pairTopic, 0)
	switch {
	case slices.Equal(pm.Isr, []int32{leader}) && pm.Leader == -1:
		t.Logf("the controller saw the follower die first: the partition waits for the leader")
	case slices.Equal(pm.Isr, []int32{follower}):
		t.Logf("the controller saw the leader die first: the shorter replica leads (leader %d)", pm.Leader)
	default:
		t.Fatalf("after both died and the shorter replica returned: %v", pm)
	}
	c.brokers[leader].start()
	w.waitAcks(c, 1000)
	rep := c.verify(pairTopic, 1, w, hw)
	if slices.Equal(pm.Isr, []int32{follower}) && rep.truncations == 0 {
		t.Fatal("the old leader's unreplicated suffix was never truncated")
	}
}

// An out-of-sync replica never leads while unclean election is off: the
// follower dies and leaves the ISR, the leader dies, the follower returns
// alone, and the partition stays offline until the in-sync replica is back.
func TestFaultOutOfSyncReplicaDoesNotLead(t *testing.T) {
	c, w, hw, st := startPairCluster(t)
	leader, follower := st.Leader, otherReplica(st, st.Leader)
	c.brokers[follower].kill9()
	c.waitFor("the dead follower out of the ISR", 30*time.Second, func() bool {
		pm := c.partitionState(pairTopic, 0)
		return pm != nil && !slices.Contains(pm.Isr, follower)
	})
	w.waitAcks(c, 500)
	c.brokers[leader].kill9()
	c.brokers[follower].start()
	c.waitFor("the follower registered again", 30*time.Second, func() bool {
		md, err := c.metadata()
		return err == nil && slices.ContainsFunc(md.Brokers, func(b *messages.BrokerInfo) bool { return b.Id == follower })
	})
	// Once the controller has seen the leader die (the partition goes
	// offline, or the follower leads: the check below fails) and counts
	// two brokers alive (the follower and the third), it has decided on the
	// follower's return.
	c.waitFor("the leader's death seen", time.Minute, func() bool {
		pm := c.partitionState(pairTopic, 0)
		return pm != nil && pm.Leader != leader
	})
	c.waitControllerCounts(2)
	if pm := c.partitionState(pairTopic, 0); pm == nil || pm.Leader == follower {
		t.Fatalf("the out-of-sync replica %d became leader: %v", follower, pm)
	}
	c.brokers[leader].start()
	w.waitAcks(c, 1000)
	c.verify(pairTopic, 1, w, hw)
}

// pairTopic is the RF=2 topic of the two-replica scenarios.
const pairTopic = "pair"

// startPairCluster starts three brokers (with extra flags) and acks=all
// producers on pairTopic, one partition with two replicas and
// min.insync.replicas=1, and returns once 3000 records are acknowledged,
// with the partition's state then.
func startPairCluster(t *testing.T, extra ...string) (*testCluster, *workload, *hwMonitor, *messages.PartitionMetadata) {
	t.Helper()
	c := startCluster(t, 3, extra...)
	c.createTopic(pairTopic, 1, 2, map[string]string{"min.insync.replicas": "1"})
	hw := startHWMonitor(c, pairTopic)
	w := startWorkload(t, c, pairTopic, 2)
	w.waitAcks(c, 3000)
	return c, w, hw, c.partitionState(pairTopic, 0)
}

// otherReplica returns a replica of the partition other than id.
func otherReplica(st *messages.PartitionMetadata, id int32) int32 {
	for _, r := range st.Replicas {
		if r != id {
			return r
		}
	}
	return -1
}

// 5. SIGSTOP the leader until a new leader is elected, then SIGCONT: the
// paused leader must not complete any acks=all request from the paused
// time, and its divergent suffix is truncated when it follows. Besides the
// workload, acks=all requests are sent straight to the zombie while it is
// paused; it reads them when it wakes, and none may be acknowledged.
func TestFaultZombieLeader(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	leader := c.leaderOf(faultTopic, 0)
	epoch := c.partitionState(faultTopic, 0).LeaderEpoch
	zombie, err := client.NewAdmin(c.brokers[leader].Addr, client.RequestTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	paused := time.Now()
	c.brokers[leader].pause()
	const direct = 20
	type answer struct {
		resp *messages.ProduceResponse
		err  error
	}
	answers := make(chan answer, direct)
	for i := range direct {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			res, err := zombie.Request(ctx, c.brokers[leader].Addr, &messages.ProduceRequest{Topic: faultTopic, Partition: 0,
				Acks: -1, TimeoutMs: 60000, Records: rawBatch(fmt.Sprintf("zombie-%d", i))})
			r, _ := res.(*messages.ProduceResponse)
			answers <- answer{r, err}
		}()
	}
	c.waitFor("a new leader while the old one is paused", 30*time.Second, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && pm.Leader != leader && pm.Leader > 0 && pm.LeaderEpoch > epoch
	})
	w.waitAcks(c, 2000)
	if at := w.ledger.firstAckAfter(0, paused); !at.IsZero() {
		t.Logf("partition 0 acknowledged again %v after its leader was paused", at.Sub(paused).Round(time.Millisecond))
	}
	c.brokers[leader].resume()
	appended, unanswered := 0, 0
	for range direct {
		a := <-answers
		switch {
		case a.err != nil:
			unanswered++ // not acknowledged either: the transport delivers at most once
		case a.resp.Error == messages.ErrorCode_NONE:
			t.Fatalf("the deposed leader acknowledged an acks=all produce at offset %d", a.resp.BaseOffset)
		case strings.Contains(a.resp.ErrorMessage, "before the batch was replicated"):
			appended++
		}
	}
	t.Logf("the zombie acknowledged none of %d direct requests (%d unanswered); %d were written to its log before it stepped down",
		direct, unanswered, appended)
	c.waitFor("the old leader following", time.Minute, func() bool {
		pm := c.partitionState(faultTopic, 0)
		return pm != nil && slices.Contains(pm.Isr, leader) && pm.Leader != leader
	})
	w.waitAcks(c, 2000)
	rep := c.verify(faultTopic, 3, w, hw)
	if appended > 0 && rep.truncations == 0 {
		t.Fatal("the zombie wrote batches nobody else has, yet no divergent suffix was truncated")
	}
}

// 6. kill -9 the controller's broker: another broker becomes controller and
// nothing acknowledged is lost.
func TestFaultControllerKilled(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	ctrl := c.controller()
	if ctrl <= 0 {
		t.Fatal("no controller")
	}
	killed := time.Now()
	c.brokers[ctrl].kill9()
	c.waitFor("a new controller", 30*time.Second, func() bool {
		id := c.controller()
		return id > 0 && id != ctrl
	})
	t.Logf("a new controller %v after kill -9 of broker %d", time.Since(killed).Round(time.Millisecond), ctrl)
	// The new controller works: it creates topics and elects leaders.
	c.createTopic("after-controller", 2, 2, nil)
	w.waitAcks(c, 2000)
	c.brokers[ctrl].start()
	w.waitAcks(c, 2000)
	c.verify(faultTopic, 3, w, hw)
}

// 7. Random kills (-9) and restarts of any broker for a minute while
// producing.
func TestFaultRandomKills(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	run := soak(t, 30*time.Second)
	end := time.Now().Add(run)
	kills := 0
	for time.Now().Before(end) {
		id := int32(1 + rng.IntN(3))
		c.brokers[id].kill9()
		kills++
		time.Sleep(time.Duration(500+rng.IntN(3000)) * time.Millisecond)
		c.brokers[id].start()
		time.Sleep(time.Duration(1000+rng.IntN(4000)) * time.Millisecond)
	}
	t.Logf("%d kills in %v", kills, run)
	w.waitAcks(c, 1000)
	c.verify(faultTopic, 3, w, hw)
}

// Cluster-only error codes, reached through the client: a produce to a
// follower (NOT_LEADER), a fetch with the epoch of a deposed leader
// (FENCED_LEADER_EPOCH), and a topic needing more brokers than are alive.
func TestClusterErrorCodes(t *testing.T) {
	c := startCluster(t, 3)
	c.createTopic("codes", 1, 2, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := c.partitionState("codes", 0)
	var follower, outsider int32
	for _, id := range c.ids() {
		switch {
		case id == st.Leader:
		case slices.Contains(st.Replicas, id):
			follower = id
		default:
			outsider = id
		}
	}
	batch := rawBatch("x")
	for _, id := range []int32{follower, outsider} {
		res, err := c.admin.Request(ctx, c.brokers[id].Addr, &messages.ProduceRequest{Topic: "codes", Acks: 1, Records: batch})
		if err != nil {
			t.Fatal(err)
		}
		if code := res.(*messages.ProduceResponse).Error; code != messages.ErrorCode_NOT_LEADER {
			t.Errorf("produce to broker %d (not the leader): %v, want NOT_LEADER", id, code)
		}
	}
	// Move leadership: the old epoch is fenced on the new leader.
	c.brokers[st.Leader].kill9()
	c.waitFor("a new leader", 30*time.Second, func() bool {
		pm := c.partitionState("codes", 0)
		return pm != nil && pm.Leader == follower
	})
	res, err := c.admin.Request(ctx, c.brokers[follower].Addr, &messages.FetchRequest{Topic: "codes", MaxBytes: 1024, CurrentLeaderEpoch: st.LeaderEpoch})
	if err != nil {
		t.Fatal(err)
	}
	if code := res.(*messages.FetchResponse).Error; code != messages.ErrorCode_FENCED_LEADER_EPOCH {
		t.Errorf("fetch with the deposed epoch: %v, want FENCED_LEADER_EPOCH", code)
	}
	// The new leader is the last in-sync replica, below min.insync.replicas=2:
	// acks=all is refused before anything is written; acks=1 still works.
	c.waitFor("an ISR of one", 30*time.Second, func() bool {
		pm := c.partitionState("codes", 0)
		return pm != nil && len(pm.Isr) == 1
	})
	leo := c.replicaLEO(follower, "codes", 0)
	res, err = c.admin.Request(ctx, c.brokers[follower].Addr, &messages.ProduceRequest{Topic: "codes", Acks: -1, Records: batch})
	if err != nil {
		t.Fatal(err)
	}
	if code := res.(*messages.ProduceResponse).Error; code != messages.ErrorCode_NOT_ENOUGH_REPLICAS {
		t.Errorf("acks=all with an ISR of 1: %v, want NOT_ENOUGH_REPLICAS", code)
	}
	if after := c.replicaLEO(follower, "codes", 0); after != leo {
		t.Errorf("a refused acks=all produce moved the LEO from %d to %d", leo, after)
	}
	res, err = c.admin.Request(ctx, c.brokers[follower].Addr, &messages.ProduceRequest{Topic: "codes", Acks: 1, Records: batch})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.ProduceResponse); r.Error != messages.ErrorCode_NONE || r.BaseOffset != leo {
		t.Errorf("acks=1 with an ISR of 1: %v at %d, want offset %d", r.Error, r.BaseOffset, leo)
	}
	// Two brokers alive: replication factor 3 is refused.
	err = c.admin.CreateTopic(ctx, client.TopicSpec{Name: "too-wide", Partitions: 1, ReplicationFactor: 3})
	if !errors.Is(err, client.ErrInvalidReplicationFactor) {
		t.Errorf("rf 3 with 2 live brokers: %v", err)
	}
}

// A Consul outage longer than the health-check TTL: brokers keep their
// data path, re-register when Consul is back without restarting, and the
// cluster elects a controller and serves acks=all again.
func TestConsulOutage(t *testing.T) {
	c, w, hw := startFaultCluster(t)
	if err := c.consul.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second)
	if err := c.consul.Resume(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every broker registered again", time.Minute, func() bool {
		md, err := c.metadata()
		return err == nil && len(md.Brokers) == 3 && md.ControllerId > 0
	})
	c.waitFor("full ISRs again", time.Minute, func() bool {
		for p := int32(0); p < 3; p++ {
			if pm := c.partitionState(faultTopic, p); pm == nil || pm.Leader < 0 || len(pm.Isr) != 3 {
				return false
			}
		}
		return true
	})
	w.waitAcks(c, 2000)
	for _, b := range c.brokers {
		if b.runs.Load() != 1 || !b.alive() {
			t.Fatal("a broker was restarted or died")
		}
	}
	c.verify(faultTopic, 3, w, hw)
}
