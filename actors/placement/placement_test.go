package placement

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAssignIsDistinctAndBalanced(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for iter := 0; iter < 500; iter++ {
		n := 1 + rng.IntN(7)
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(10 + i*3)
		}
		rf := 1 + rng.IntN(n)
		parts := 1 + rng.IntN(40)
		got, err := Assign(brokers, parts, rf, rng.Int(), rng.Int())
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for p, reps := range got {
			if len(reps) != rf {
				t.Fatalf("partition %d: %d replicas, want %d", p, len(reps), rf)
			}
			seen := slices.Clone(reps)
			slices.Sort(seen)
			if len(slices.Compact(seen)) != rf {
				t.Fatalf("partition %d: duplicate replicas %v", p, reps)
			}
			for _, b := range reps {
				if !slices.Contains(brokers, b) {
					t.Fatalf("unknown broker %d", b)
				}
			}
			leaders[reps[0]]++
		}
		// Leaders spread evenly: counts differ by at most one.
		lo, hi := parts, 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
		}
		if hi-lo > 1 {
			t.Fatalf("leaders unbalanced: %v", leaders)
		}
	}
}

func TestAssignRejectsTooFewBrokers(t *testing.T) {
	if _, err := Assign([]int32{1, 2}, 3, 3, 0, 0); err == nil {
		t.Fatal("rf 3 on 2 brokers accepted")
	}
	if _, err := Assign([]int32{1}, 0, 1, 0, 0); err == nil {
		t.Fatal("0 partitions accepted")
	}
}
