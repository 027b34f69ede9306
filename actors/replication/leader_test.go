package replication

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func newTestLeader(replicas, isr []int32, minISR int, leo int64) *Leader {
	return NewLeader(LeaderConfig{ReplicaID: 1, Epoch: 3, Replicas: replicas, ISR: isr, MinISR: minISR,
		LagTimeMax: 10 * time.Second}, leo, t0)
}

// The seed document's walk-through: three replicas with offsets 0 and 1,
// two appends, followers catching up at different speeds.
func TestHighWatermarkFollowsTheSlowestInSyncReplica(t *testing.T) {
	l := newTestLeader([]int32{1, 2, 3}, []int32{1, 2, 3}, 1, 2)
	l.FollowerFetched(2, 2, 0, t0)
	l.FollowerFetched(3, 2, 0, t0)
	if hw := l.HighWatermark(); hw != 2 {
		t.Fatalf("initial HW %d, want 2", hw)
	}
	l.Appended(4) // the producer writes offsets 2 and 3
	if hw := l.HighWatermark(); hw != 2 {
		t.Fatalf("HW moved to %d before any follower had the new records", hw)
	}
	l.FollowerFetched(2, 4, 0, t0) // follower 1 has 2 and 3
	l.FollowerFetched(3, 3, 0, t0) // follower 2 has only 2
	if hw := l.HighWatermark(); hw != 3 {
		t.Fatalf("HW %d, want 3 (consumers may read 0, 1, 2)", hw)
	}
	l.FollowerFetched(3, 4, 0, t0)
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("HW %d, want 4", hw)
	}
}

func TestHighWatermarkWaitsForUnknownFollowers(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, []int32{1, 2}, 1, 10)
	if hw := l.HighWatermark(); hw != 0 {
		t.Fatalf("HW %d with a follower whose LEO is unknown", hw)
	}
	l.FollowerFetched(2, 7, 0, t0)
	if hw := l.HighWatermark(); hw != 7 {
		t.Fatalf("HW %d, want 7", hw)
	}
}

func TestHighWatermarkFrozenBelowMinISR(t *testing.T) {
	l := newTestLeader([]int32{1, 2, 3}, []int32{1}, 2, 5)
	if l.CanAcceptAcksAll() {
		t.Fatal("acks=all accepted with ISR below min.insync.replicas")
	}
	if l.Appended(9) || l.HighWatermark() != 0 {
		t.Fatalf("HW advanced to %d with ISR below min", l.HighWatermark())
	}
	l.ISRCommitted([]int32{1, 2}, nil, 1)
	if l.HighWatermark() != 0 {
		t.Fatal("HW advanced before follower 2 reported its LEO")
	}
	l.FollowerFetched(2, 9, 0, t0)
	if hw := l.HighWatermark(); hw != 9 {
		t.Fatalf("HW %d, want 9", hw)
	}
}

func TestISRShrinksAfterLagAndExpandsWhenCaughtUp(t *testing.T) {
	l := newTestLeader([]int32{1, 2, 3}, []int32{1, 2, 3}, 1, 0)
	l.FollowerFetched(2, 0, 0, t0)
	l.FollowerFetched(3, 0, 0, t0)
	l.Appended(100)
	// Follower 2 keeps up, follower 3 goes silent.
	now := t0
	for i := 0; i < 11; i++ {
		now = now.Add(time.Second)
		l.FollowerFetched(2, 100, 0, now)
		if p := l.Tick(now); p != nil {
			if i < 9 {
				t.Fatalf("shrink proposed after %d s", i+1)
			}
			if !slices.Equal(p, []int32{1, 2}) {
				t.Fatalf("proposed %v, want [1 2]", p)
			}
		}
	}
	prop := l.Proposed()
	if !slices.Equal(prop, []int32{1, 2}) {
		t.Fatalf("in flight %v", prop)
	}
	// While the shrink is in flight the HW still waits for follower 3.
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d moved past the follower being removed before the commit", l.HighWatermark())
	}
	l.ISRCommitted([]int32{1, 2}, nil, 1)
	if l.HighWatermark() != 100 {
		t.Fatalf("HW %d after shrink, want 100", l.HighWatermark())
	}
	// Follower 3 comes back and catches up: the leader proposes it again.
	_, p := l.FollowerFetched(3, 50, 0, now)
	if p != nil {
		t.Fatalf("proposed %v for a follower below the HW", p)
	}
	_, p = l.FollowerFetched(3, 100, 0, now)
	if !slices.Equal(p, []int32{1, 2, 3}) {
		t.Fatalf("proposed %v, want [1 2 3]", p)
	}
	l.ISRCommitted([]int32{1, 2, 3}, nil, 2)
	if got := l.ISR(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v", got)
	}
}

// A follower that fetches steadily but never quite reaches the moving LEO
// still counts as caught up when it reaches the LEO of its previous fetch.
func TestSteadyFollowerIsNotDropped(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, []int32{1, 2}, 1, 0)
	now := t0
	var leo int64
	for i := 0; i < 100; i++ {
		now = now.Add(500 * time.Millisecond)
		prev := leo
		leo += 10
		l.Appended(leo)
		l.FollowerFetched(2, prev, 0, now) // always one step behind
		if p := l.Tick(now); p != nil {
			t.Fatalf("dropped a steady follower at step %d", i)
		}
	}
}

func TestStaleISRCommitIgnored(t *testing.T) {
	l := NewLeader(LeaderConfig{ReplicaID: 1, Epoch: 1, PartitionEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1, LagTimeMax: time.Second}, 0, t0)
	l.ISRCommitted([]int32{1}, nil, 4)
	if !slices.Equal(l.ISR(), []int32{1, 2}) {
		t.Fatalf("stale commit applied: %v", l.ISR())
	}
}

// Randomized: the HW never decreases, never exceeds any in-sync replica's
// LEO, and never passes the leader's LEO.
func TestHighWatermarkInvariantsRandomized(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		replicas := []int32{1, 2, 3}
		l := newTestLeader(replicas, replicas, 1+rng.IntN(2), 0)
		leos := map[int32]int64{2: 0, 3: 0}
		now := t0
		var leo, lastHW int64
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			switch rng.IntN(4) {
			case 0:
				leo += int64(rng.IntN(5))
				l.Appended(leo)
			case 1, 2:
				id := int32(2 + rng.IntN(2))
				leos[id] = min(leo, leos[id]+int64(rng.IntN(6)))
				_, p := l.FollowerFetched(id, leos[id], 0, now)
				if p != nil && rng.IntN(2) == 0 {
					l.ISRCommitted(p, nil, l.PartitionEpoch()+1)
				} else if p != nil {
					l.ProposalRefused(p, now)
				}
			case 3:
				if p := l.Tick(now); p != nil {
					if rng.IntN(3) > 0 {
						l.ISRCommitted(p, nil, l.PartitionEpoch()+1)
					} else {
						l.ProposalRefused(p, now)
					}
				}
			}
			hw := l.HighWatermark()
			if hw < lastHW {
				t.Fatalf("seed %d: HW went back from %d to %d", seed, lastHW, hw)
			}
			if hw > leo {
				t.Fatalf("seed %d: HW %d above leader LEO %d", seed, hw, leo)
			}
			for _, id := range l.ISR() {
				if id != 1 && hw > leos[id] {
					t.Fatalf("seed %d: HW %d above ISR member %d's LEO %d", seed, hw, id, leos[id])
				}
			}
			lastHW = hw
		}
	}
}

// An in-sync follower whose fetch offset is below the HW has lost data it
// acknowledged (its disk was wiped): it leaves the ISR at once, not after
// replica.lag.time.max, and it does not hold the HW back once removed.
func TestFollowerBelowTheHWLeavesTheISRAtOnce(t *testing.T) {
	l := NewLeader(LeaderConfig{ReplicaID: 1, Epoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1,
		LagTimeMax: time.Hour, ISREpochs: map[int32]int64{1: 5, 2: 6}}, 100, t0)
	l.FollowerFetched(2, 100, 6, t0)
	if l.HighWatermark() != 100 {
		t.Fatalf("HW %d, want 100", l.HighWatermark())
	}
	// The follower's broker restarted at once with an empty log: same id,
	// new broker epoch, fetch offset 0.
	_, p := l.FollowerFetched(2, 0, 7, t0.Add(time.Millisecond))
	if !slices.Equal(p, []int32{1}) {
		t.Fatalf("proposal %v, want [1]", p)
	}
	if l.HighWatermark() != 100 {
		t.Fatalf("HW moved back to %d", l.HighWatermark())
	}
	l.ISRCommitted([]int32{1}, map[int32]int64{1: 5}, 1)
	l.Appended(110)
	if l.HighWatermark() != 110 {
		t.Fatalf("HW %d after the shrink, want 110", l.HighWatermark())
	}
	// It rejoins, under its new epoch, only once caught up.
	if _, p := l.FollowerFetched(2, 50, 7, t0); p != nil {
		t.Fatalf("proposal %v from a follower still behind", p)
	}
	if _, p := l.FollowerFetched(2, 110, 7, t0); !slices.Equal(p, []int32{1, 2}) || l.FollowerEpoch(2) != 7 {
		t.Fatalf("proposal %v (epoch %d), want [1 2] under epoch 7", p, l.FollowerEpoch(2))
	}
}

// A follower that fetches under another broker epoch than the ISR records
// is a new run of its broker: out of the ISR at once even if its log
// reaches the HW (KIP-903); the same fetch under the recorded epoch stays.
func TestFollowerOfAnotherBrokerEpochIsNotInSync(t *testing.T) {
	l := NewLeader(LeaderConfig{ReplicaID: 1, Epoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 1,
		LagTimeMax: time.Hour, ISREpochs: map[int32]int64{1: 5, 2: 6, 3: 8}}, 100, t0)
	if _, p := l.FollowerFetched(2, 100, 6, t0); p != nil {
		t.Fatalf("proposal %v for a follower in sync under its recorded epoch", p)
	}
	if _, p := l.FollowerFetched(3, 100, 9, t0); !slices.Equal(p, []int32{1, 2}) {
		t.Fatalf("proposal %v for a follower under a new broker epoch, want [1 2]", p)
	}
}

// Lowering min.insync.replicas while the leader runs releases the HW at
// once; raising it freezes the HW where it is.
func TestSetMinISR(t *testing.T) {
	l := newTestLeader([]int32{1, 2, 3}, []int32{1}, 2, 5)
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d below min ISR", l.HighWatermark())
	}
	if !l.SetMinISR(1) || l.HighWatermark() != 5 || !l.CanAcceptAcksAll() {
		t.Fatalf("min ISR 1: HW %d, acks=all %v", l.HighWatermark(), l.CanAcceptAcksAll())
	}
	if l.SetMinISR(2) || l.CanAcceptAcksAll() {
		t.Fatal("min ISR 2 with one in-sync replica still accepts acks=all")
	}
	if l.Appended(8) || l.HighWatermark() != 5 {
		t.Fatalf("HW moved to %d with the ISR below the raised minimum", l.HighWatermark())
	}
}

// An ISR proposal records the leader's own broker epoch, each follower's
// from its latest fetch, else the committed ISR's, and none it does not
// know.
func TestProposalEpochs(t *testing.T) {
	l := NewLeader(LeaderConfig{ReplicaID: 1, Epoch: 3, Replicas: []int32{1, 2, 3, 4}, ISR: []int32{1, 2, 3},
		ISREpochs: map[int32]int64{2: 20, 3: 30}, MinISR: 1, LagTimeMax: 10 * time.Second}, 5, t0)
	l.FollowerFetched(3, 5, 31, t0) // broker 3 restarted: its fetches carry epoch 31
	got := l.ProposalEpochs([]int32{1, 2, 3, 4}, 10)
	want := map[int32]int64{1: 10, 2: 20, 3: 31}
	if len(got) != len(want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	for id, e := range want {
		if got[id] != e {
			t.Fatalf("epochs %v, want %v", got, want)
		}
	}
}

// After a refusal the leader proposes again only once the backoff has
// passed, from a fetch as from a tick; a refusal of an older proposal does
// not forget the one in flight.
func TestLeaderHoldsProposalsBackAfterARefusal(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := NewLeader(LeaderConfig{ReplicaID: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1,
		LagTimeMax: 10 * time.Second, ProposalBackoff: time.Second}, 10, t0)
	_, p := l.FollowerFetched(2, 10, 0, t0)
	if !slices.Equal(p, []int32{1, 2}) {
		t.Fatalf("a caught-up follower: proposed %v", p)
	}
	l.ProposalRefused([]int32{1}, t0) // an older proposal's refusal
	if !slices.Equal(l.Proposed(), []int32{1, 2}) {
		t.Fatalf("the proposal in flight was forgotten: %v", l.Proposed())
	}
	l.ProposalRefused(p, t0)
	if l.Proposed() != nil {
		t.Fatalf("the refused proposal is still in flight: %v", l.Proposed())
	}
	if _, p := l.FollowerFetched(2, 10, 0, t0.Add(999*time.Millisecond)); p != nil {
		t.Fatalf("proposed %v within the backoff", p)
	}
	if _, p := l.FollowerFetched(2, 10, 0, t0.Add(time.Second)); !slices.Equal(p, []int32{1, 2}) {
		t.Fatalf("after the backoff: proposed %v", p)
	}

	// The same from the tick: an ISR member that lags is dropped only
	// once the backoff after a refusal has passed.
	l = NewLeader(LeaderConfig{ReplicaID: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1,
		LagTimeMax: 10 * time.Second, ProposalBackoff: time.Second}, 10, t0)
	late := t0.Add(11 * time.Second)
	p = l.Tick(late)
	if !slices.Equal(p, []int32{1}) {
		t.Fatalf("a lagging follower: proposed %v", p)
	}
	l.ProposalRefused(p, late)
	if p := l.Tick(late.Add(500 * time.Millisecond)); p != nil {
		t.Fatalf("proposed %v within the backoff", p)
	}
	if p := l.Tick(late.Add(time.Second)); !slices.Equal(p, []int32{1}) {
		t.Fatalf("after the backoff: proposed %v", p)
	}
}

// A replica a reassignment adds is tracked from the state that adds it:
// once it has caught up the leader proposes it for the ISR; a replica the
// move removes no longer holds the HW back.
func TestReplicasChangedUnderALeadership(t *testing.T) {
	l := newTestLeader([]int32{1, 2}, []int32{1, 2}, 1, 10)
	l.FollowerFetched(2, 10, 0, t0)
	if _, propose := l.FollowerFetched(3, 10, 0, t0); propose != nil {
		t.Fatalf("proposed %v for a broker that is not a replica", propose)
	}
	l.ReplicasChanged([]int32{1, 2, 3}, t0)
	if _, propose := l.FollowerFetched(3, 4, 0, t0); propose != nil {
		t.Fatalf("proposed %v for a replica still catching up", propose)
	}
	_, propose := l.FollowerFetched(3, 10, 0, t0)
	if !slices.Equal(propose, []int32{1, 2, 3}) {
		t.Fatalf("proposed %v for a caught-up added replica, want [1 2 3]", propose)
	}
	l.ISRCommitted([]int32{1, 2, 3}, nil, 1)

	// The move completes without 2: it stops holding the HW back.
	l.ReplicasChanged([]int32{1, 3}, t0)
	l.ISRCommitted([]int32{1, 3}, nil, 2)
	l.Appended(12)
	l.FollowerFetched(3, 12, 0, t0)
	if hw := l.HighWatermark(); hw != 12 {
		t.Fatalf("HW %d after the removed replica left, want 12", hw)
	}
}
