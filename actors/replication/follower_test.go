package replication

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// epochLog is a replica log reduced to what truncation looks at: the leader
// epoch of every offset.
type epochLog []int32

func (l epochLog) end(epoch int32) (int32, int64, bool) {
	found := int32(-1)
	for _, e := range l {
		if e <= epoch && e > found {
			found = e
		}
	}
	if found < 0 {
		return -1, -1, false
	}
	for i, e := range l {
		if e > found {
			return found, int64(i), true
		}
	}
	return found, int64(len(l)), true
}

func (l epochLog) latest() int32 {
	if len(l) == 0 {
		return -1
	}
	return l[len(l)-1]
}

// truncate runs the follower's rounds against the leader until done.
func truncate(follower, leader epochLog, hw int64) (epochLog, int) {
	rounds := 0
	for {
		rounds++
		le, lend, ok := leader.end(follower.latest())
		if !ok {
			le, lend = -1, -1
		}
		step := TruncationStep(le, lend, follower.end, int64(len(follower)), hw)
		if step.TruncateTo < int64(len(follower)) {
			follower = follower[:step.TruncateTo]
		}
		if step.Done {
			return follower, rounds
		}
		if rounds > 100 {
			panic("no progress")
		}
	}
}

func TestTruncationScenarios(t *testing.T) {
	cases := []struct {
		name     string
		follower epochLog
		leader   epochLog
		hw       int64
		want     int
	}{
		// KIP-101 scenario 1: a follower restarts with a stale HW; truncating
		// to the HW would drop records the leader has. By epoch it keeps them.
		{"stale HW keeps replicated data", epochLog{1, 1, 1, 1}, epochLog{1, 1, 1, 1, 2}, 2, 4},
		// The old leader wrote records nobody else got; the new leader moved on.
		{"divergent suffix is removed", epochLog{1, 1, 1, 1, 1}, epochLog{1, 1, 1, 2, 2}, 3, 3},
		// KIP-279: two leader changes in quick succession. The follower led at
		// epoch 2 briefly; the leader has epochs 1 and 3 only.
		{"unknown intermediate epoch needs a second round", epochLog{1, 1, 2, 2}, epochLog{1, 1, 1, 3}, 2, 2},
		{"follower behind, nothing to cut", epochLog{1, 1}, epochLog{1, 1, 1, 2, 2}, 0, 2},
		{"empty follower", epochLog{}, epochLog{1, 1}, 0, 0},
		{"leader knows nothing older: keep the HW", epochLog{0, 0, 0}, epochLog{5, 5}, 1, 1},
	}
	for _, c := range cases {
		got, _ := truncate(c.follower, c.leader, c.hw)
		if len(got) != c.want {
			t.Errorf("%s: truncated to %d, want %d", c.name, len(got), c.want)
		}
	}
}

// Randomized model: a leader history with random leader changes, where
// each new leader's log is a prefix of the previous leader's plus its own
// writes, and followers that copied a prefix of some earlier leader's log.
// After truncation by epoch, a follower's log is always a prefix of the
// current leader's log, and it keeps everything the two share.
func TestTruncationRandomized(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		var logs []epochLog // the leader's log at each epoch
		cur := epochLog{}
		for epoch := int32(0); epoch < int32(2+rng.IntN(6)); epoch++ {
			// The new leader had some prefix of the previous leader's log.
			if len(cur) > 0 {
				cur = slices.Clone(cur[:rng.IntN(len(cur)+1)])
			}
			for n := rng.IntN(5); n > 0; n-- {
				cur = append(cur, epoch)
			}
			logs = append(logs, slices.Clone(cur))
		}
		leader := logs[len(logs)-1]
		// A follower copied a prefix of an older leader's log.
		src := logs[rng.IntN(len(logs))]
		follower := slices.Clone(src[:rng.IntN(len(src)+1)])
		common := 0
		for common < len(follower) && common < len(leader) && follower[common] == leader[common] {
			common++
		}
		hw := int64(rng.IntN(common + 1))
		got, rounds := truncate(follower, leader, hw)
		if len(got) > len(leader) || !slices.Equal(got, leader[:len(got)]) {
			t.Fatalf("seed %d: follower %v vs leader %v: truncated to %v, not a prefix", seed, follower, leader, got)
		}
		if len(got) < common {
			t.Fatalf("seed %d: follower %v vs leader %v: truncated to %d, below the common prefix %d", seed, follower, leader, len(got), common)
		}
		if rounds > len(logs)+1 {
			t.Fatalf("seed %d: %d rounds", seed, rounds)
		}
	}
}

func TestFollowerHighWatermark(t *testing.T) {
	if hw := FollowerHighWatermark(5, 9, 7); hw != 7 {
		t.Fatalf("capped by own LEO: %d", hw)
	}
	if hw := FollowerHighWatermark(5, 3, 7); hw != 5 {
		t.Fatalf("went back: %d", hw)
	}
}

// Randomized model of divergent histories: three replicas, a new leader at
// every epoch chosen among all of them (so a leader may hold a longer
// suffix of an older epoch than its predecessor kept, as leader
// [1,1,1,3] against follower [1,1,2,2]), each leader appending under its
// epoch, and followers that sometimes truncate against the leader and copy
// part of what it has. Every truncation must leave the follower a prefix
// of the leader's log that keeps everything the two logs share.
func TestTruncationRandomizedDivergentHistories(t *testing.T) {
	for seed := uint64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		replicas := make([]epochLog, 3)
		for epoch := int32(1); epoch <= int32(3+rng.IntN(8)); epoch++ {
			leader := rng.IntN(len(replicas))
			for n := rng.IntN(4); n > 0; n-- {
				replicas[leader] = append(replicas[leader], epoch)
			}
			for f := range replicas {
				if f == leader || rng.IntN(3) == 0 {
					continue // this follower misses the epoch (dead or slow)
				}
				before := slices.Clone(replicas[f])
				common := 0
				for common < len(before) && common < len(replicas[leader]) && before[common] == replicas[leader][common] {
					common++
				}
				hw := int64(rng.IntN(common + 1))
				got, rounds := truncate(before, replicas[leader], hw)
				if len(got) > len(replicas[leader]) || !slices.Equal(got, replicas[leader][:len(got)]) {
					t.Fatalf("seed %d epoch %d: follower %v vs leader %v truncated to %v: not a prefix of the leader's log",
						seed, epoch, before, replicas[leader], got)
				}
				if len(got) < common || int64(len(got)) < hw {
					t.Fatalf("seed %d epoch %d: follower %v vs leader %v truncated to %d: below the common prefix %d or the HW %d",
						seed, epoch, before, replicas[leader], len(got), common, hw)
				}
				if rounds > int(epoch)+1 {
					t.Fatalf("seed %d: %d rounds", seed, rounds)
				}
				// Copy part of what the leader has beyond the follower.
				n := len(got) + rng.IntN(len(replicas[leader])-len(got)+1)
				replicas[f] = slices.Clone(replicas[leader][:n])
			}
		}
	}
}

func TestTruncationLongerOlderSuffixOnTheLeader(t *testing.T) {
	// The shape: the leader kept more of epoch 1 than the follower,
	// which led at epoch 2 in between.
	got, rounds := truncate(epochLog{1, 1, 2, 2}, epochLog{1, 1, 1, 3}, 2)
	// The leader answers for epoch 1 (its largest <= 2): one round.
	if !slices.Equal(got, epochLog{1, 1}) || rounds != 1 {
		t.Fatalf("truncated to %v in %d rounds, want [1 1] in 1", got, rounds)
	}
}
