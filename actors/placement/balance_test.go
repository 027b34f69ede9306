package placement

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// apply returns current with plan's partitions replaced.
func apply(current, plan map[Partition][]int32) map[Partition][]int32 {
	out := maps.Clone(current)
	maps.Copy(out, plan)
	return out
}

// moved counts the replicas a plan moves: brokers a partition gains.
func moved(current, plan map[Partition][]int32) int {
	n := 0
	for p, reps := range plan {
		for _, b := range reps {
			if !slices.Contains(current[p], b) {
				n++
			}
		}
	}
	return n
}

func loads(assign map[Partition][]int32) map[int32]int {
	l := map[int32]int{}
	for _, reps := range assign {
		for _, b := range reps {
			l[b]++
		}
	}
	return l
}

// layout places partitions with Assign over brokers 1..n.
func layout(t *testing.T, n, partitions, rf int) map[Partition][]int32 {
	t.Helper()
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	got, err := Assign(ids, partitions, rf, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Partition][]int32{}
	for i, reps := range got {
		out[Partition{Topic: "t", Index: int32(i)}] = reps
	}
	return out
}

func noRacks(ids ...int32) map[int32]string {
	out := map[int32]string{}
	for _, id := range ids {
		out[id] = ""
	}
	return out
}

// A broker added to a balanced cluster takes its share, in exactly as many
// moves as it takes replicas; a balanced cluster plans nothing.
func TestBalanceAddsABrokerWithTheFewestMoves(t *testing.T) {
	current := layout(t, 3, 6, 2) // 4 replicas per broker
	if plan := Balance(current, noRacks(1, 2, 3)); len(plan) != 0 {
		t.Fatalf("a balanced cluster got a plan: %v", plan)
	}
	plan := Balance(current, noRacks(1, 2, 3, 4))
	after := apply(current, plan)
	if l := loads(after); l[4] != 3 || l[1] != 3 || l[2] != 3 || l[3] != 3 {
		t.Fatalf("loads after adding broker 4: %v", l)
	}
	if n := moved(current, plan); n != 3 {
		t.Fatalf("%d replicas moved, want the 3 broker 4 takes: %v", n, plan)
	}
}

// Draining a broker moves exactly its replicas, none of its preferred
// leaderships remain, and the others stay within one of each other.
func TestDrainMovesOnlyTheBrokersReplicas(t *testing.T) {
	current := layout(t, 4, 12, 3)
	onTwo := loads(current)[2]
	plan := Drain(current, noRacks(1, 2, 3, 4), 2)
	after := apply(current, plan)
	l := loads(after)
	if l[2] != 0 || moved(current, plan) != onTwo {
		t.Fatalf("drain of broker 2 (%d replicas) moved %d, left %d: %v", onTwo, moved(current, plan), l[2], plan)
	}
	if lo, hi := min(l[1], l[3], l[4]), max(l[1], l[3], l[4]); hi-lo > 1 {
		t.Fatalf("loads after the drain: %v", l)
	}
}

// Over random layouts, added and removed brokers and racks: every plan
// keeps each partition's replica count and distinct replicas, uses only
// the brokers given, never leaves a partition on fewer racks than it had
// (where it had only live brokers), and without racks leaves loads within
// one of each other.
func TestBalanceProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for iter := 0; iter < 400; iter++ {
		n := 2 + rng.IntN(6)
		rf := 1 + rng.IntN(min(3, n))
		current := layout(t, n, 1+rng.IntN(30), rf)
		racks := map[int32]string{}
		withRacks := rng.IntN(2) == 0
		for id := int32(1); id <= int32(n+rng.IntN(3)); id++ {
			racks[id] = ""
			if withRacks {
				racks[id] = fmt.Sprint("r", rng.IntN(3))
			}
		}
		if rng.IntN(3) == 0 && len(racks) > rf {
			delete(racks, int32(1+rng.IntN(n))) // a broker drained
		}
		plan := Balance(current, racks)
		after := apply(current, plan)
		for p, reps := range after {
			seen := slices.Clone(reps)
			slices.Sort(seen)
			if len(reps) != len(current[p]) || len(slices.Compact(seen)) != len(reps) {
				t.Fatalf("iter %d: %v went from %v to %v", iter, p, current[p], reps)
			}
			live := true
			for _, b := range current[p] {
				_, ok := racks[b]
				live = live && ok
			}
			for _, b := range reps {
				if _, ok := racks[b]; !ok {
					t.Fatalf("iter %d: %v left on broker %d, which is not given (racks %v)", iter, p, b, racks)
				}
			}
			if live && rackCount(reps, racks) < rackCount(current[p], racks) {
				t.Fatalf("iter %d: %v went from racks of %v to %v (racks %v)", iter, p, current[p], reps, racks)
			}
		}
		if !withRacks {
			l := loads(after)
			lo, hi := len(after)*rf, 0
			for id := range racks {
				lo, hi = min(lo, l[id]), max(hi, l[id])
			}
			if hi-lo > 1 {
				t.Fatalf("iter %d: loads %v over brokers %v", iter, l, slices.Sorted(maps.Keys(racks)))
			}
		}
	}
}

// With racks, a partition whose replicas share a rack moves to another
// rack when a broker there can take it, and none is put on one rack.
func TestBalanceKeepsRacks(t *testing.T) {
	current := map[Partition][]int32{{"t", 0}: {1, 3}, {"t", 1}: {3, 1}, {"t", 2}: {1, 3}}
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	after := apply(current, Balance(current, racks))
	for p, reps := range after {
		if racks[reps[0]] == racks[reps[1]] {
			t.Fatalf("%v put on one rack: %v", p, reps)
		}
	}
	if l := loads(after); l[2] == 0 || l[4] == 0 {
		t.Fatalf("new brokers got nothing: %v", l)
	}
}

func TestBalanceWithoutBrokers(t *testing.T) {
	if plan := Balance(map[Partition][]int32{{"t", 0}: {1}}, nil); plan != nil {
		t.Fatalf("plan without brokers: %v", plan)
	}
}

// Preferred leaders piled on one broker are spread by reordering replicas,
// which moves no data.
func TestBalanceSpreadsPreferredLeaders(t *testing.T) {
	current := map[Partition][]int32{{"t", 0}: {1, 2}, {"t", 1}: {1, 3}, {"t", 2}: {1, 2}, {"t", 3}: {1, 3}, {"t", 4}: {2, 3}, {"t", 5}: {3, 2}}
	plan := Balance(current, noRacks(1, 2, 3))
	if moved(current, plan) != 0 {
		t.Fatalf("a reorder moved data: %v", plan)
	}
	leads := map[int32]int{}
	for _, reps := range apply(current, plan) {
		leads[reps[0]]++
	}
	if leads[1] != 2 || leads[2] != 2 || leads[3] != 2 {
		t.Fatalf("preferred leaders after the plan: %v (plan %v)", leads, plan)
	}
}
