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

// With racks, every partition's replicas cover as many racks as they can
// (min(rf, racks)), replicas are distinct and leaders spread evenly.
func TestAssignWithRacksSpreadsOverRacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for iter := 0; iter < 500; iter++ {
		n := 2 + rng.IntN(8)
		nracks := 2 + rng.IntN(min(n-1, 3))
		racks := map[int32]string{}
		for i := 0; i < n; i++ {
			racks[int32(1+i)] = string(rune('a' + rng.IntN(nracks)))
		}
		distinct := map[string]bool{}
		for _, r := range racks {
			distinct[r] = true
		}
		rf := 1 + rng.IntN(n)
		parts := 1 + rng.IntN(40)
		got, err := AssignWithRacks(racks, parts, rf, rng.Int(), rng.Int())
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for p, reps := range got {
			seen := slices.Clone(reps)
			slices.Sort(seen)
			if len(reps) != rf || len(slices.Compact(seen)) != rf {
				t.Fatalf("racks %v rf %d: partition %d has replicas %v", racks, rf, p, reps)
			}
			covered := map[string]bool{}
			for _, b := range reps {
				covered[racks[b]] = true
			}
			if want := min(rf, len(distinct)); len(covered) != want {
				t.Fatalf("racks %v rf %d: partition %d's replicas %v cover %d racks, want %d", racks, rf, p, reps, len(covered), want)
			}
			leaders[reps[0]]++
		}
		lo, hi := parts, 0
		for id := range racks {
			lo, hi = min(lo, leaders[id]), max(hi, leaders[id])
		}
		if hi-lo > 1 {
			t.Fatalf("racks %v: leaders unbalanced: %v", racks, leaders)
		}
	}
}

// A broker without a rack (or a single rack) means no rack awareness: the
// plain assignment, and the same errors.
func TestAssignWithRacksFallsBack(t *testing.T) {
	for _, racks := range []map[int32]string{{1: "a", 2: "", 3: "b"}, {1: "a", 2: "a", 3: "a"}} {
		ids := []int32{1, 2, 3}
		want, _ := Assign(ids, 7, 2, 5, 1)
		got, err := AssignWithRacks(racks, 7, 2, 5, 1)
		if err != nil || !slices.EqualFunc(got, want, slices.Equal[[]int32]) {
			t.Fatalf("racks %v: %v, %v; want the plain %v", racks, got, err, want)
		}
	}
	if _, err := AssignWithRacks(map[int32]string{1: "a", 2: "b"}, 3, 3, 0, 0); err == nil {
		t.Fatal("rf 3 on 2 brokers accepted")
	}
	if _, err := AssignWithRacks(map[int32]string{1: "a", 2: "b"}, 0, 1, 0, 0); err == nil {
		t.Fatal("0 partitions accepted")
	}
}
