package election

import (
	"reflect"
	"testing"
)

func TestPreferred(t *testing.T) {
	moved := Partition{Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}, PartitionEpoch: 10,
		ISREpochs: map[int32]int64{1: 7, 2: 3, 3: 4}}
	cases := []struct {
		name    string
		p       Partition
		live    Live
		want    Partition
		outcome PreferredOutcome
	}{
		{"preferred in sync: leads, ISR kept, epochs bumped", moved, epochs(map[int32]int64{1: 7, 2: 3, 3: 4}),
			Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 6, ISR: []int32{2, 3, 1}, PartitionEpoch: 11,
				ISREpochs: map[int32]int64{1: 7, 2: 3, 3: 4}}, PreferredElected},
		{"preferred leads already", Partition{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}, liveSet(1, 2),
			Partition{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}, PreferredAlreadyLeads},
		{"preferred dead", moved, liveSet(2, 3), moved, PreferredNotAvailable},
		{"preferred alive but out of the ISR", Partition{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2}}, liveSet(1, 2),
			Partition{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2}}, PreferredNotAvailable},
		{"preferred restarted since it was in sync", moved, epochs(map[int32]int64{1: 8, 2: 3, 3: 4}), moved, PreferredNotAvailable},
		{"preferred on a new data directory", Partition{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2, 1}, ISRDirs: map[int32]string{1: "a"}},
			members(map[int32]Member{1: {Dir: "b"}, 2: {}}),
			Partition{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2, 1}, ISRDirs: map[int32]string{1: "a"}}, PreferredNotAvailable},
		{"no replicas", Partition{Leader: NoLeader}, liveSet(1), Partition{Leader: NoLeader}, PreferredNotAvailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.p.Clone()
			got, outcome := Preferred(c.p, c.live)
			if outcome != c.outcome || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Preferred = %+v, %v; want %+v, %v", got, outcome, c.want, c.outcome)
			}
			if !reflect.DeepEqual(c.p, before) {
				t.Fatalf("Preferred changed its input: %+v", c.p)
			}
		})
	}
}

func TestImbalanced(t *testing.T) {
	part := func(leader int32, replicas ...int32) Partition {
		return Partition{Replicas: replicas, Leader: leader, ISR: replicas}
	}
	parts := []Partition{
		// broker 1 is preferred for 4 partitions and leads 3: 25% not led.
		part(1, 1, 2), part(1, 1, 3), part(1, 1, 2), part(2, 1, 2),
		// broker 2 is preferred for 2 and leads both.
		part(2, 2, 3), part(2, 2, 1),
		// broker 3 is preferred for 2 and leads 1: 50%.
		part(3, 3, 1), part(1, 3, 1),
		// broker 4 is dead: not counted.
		part(1, 4, 1),
	}
	live := liveSet(1, 2, 3)
	for _, c := range []struct {
		ratio float64
		want  []int32
	}{{0.1, []int32{1, 3}}, {0.25, []int32{3}}, {0.5, nil}} {
		if got := Imbalanced(parts, live, c.ratio); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("Imbalanced(ratio %v) = %v, want %v", c.ratio, got, c.want)
		}
	}
}
