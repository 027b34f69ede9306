package placement

import (
	"cmp"
	"maps"
	"slices"
)

// Moving replicas: the plans a reassignment carries out (adding a
// broker, draining one), as plain Go. A plan maps each partition to the
// replicas it should have; partitions that keep theirs are left out, so
// the plan's size is the work it asks for.

// Partition names a partition for a plan.
type Partition struct {
	Topic string
	Index int32
}

func (p Partition) compare(q Partition) int {
	return cmp.Or(cmp.Compare(p.Topic, q.Topic), cmp.Compare(p.Index, q.Index))
}

// Balance plans the fewest replica moves that leave every broker of racks
// (broker id to rack, "" for none) within one replica of the others, then
// reorders replicas (no data moves) so that preferred leaders are spread
// as evenly. A move never puts two replicas of a partition on one broker,
// nor takes a partition's replicas onto fewer racks. Brokers missing from
// racks (gone, or being drained) lose all their replicas.
func Balance(current map[Partition][]int32, racks map[int32]string) map[Partition][]int32 {
	next := make(map[Partition][]int32, len(current))
	for p, reps := range current {
		next[p] = slices.Clone(reps)
	}
	parts := slices.SortedFunc(maps.Keys(next), Partition.compare)
	ids := slices.Sorted(maps.Keys(racks))
	if len(ids) == 0 {
		return nil
	}
	load := func() map[int32]int {
		l := map[int32]int{}
		for _, id := range ids {
			l[id] = 0
		}
		for _, reps := range next {
			for _, b := range reps {
				l[b]++
			}
		}
		return l
	}
	// Replicas on brokers that are not in racks move first, then the most
	// loaded broker gives one to the least loaded until they are within one.
	for {
		l := load()
		from, to, part, ok := nextMove(next, parts, ids, racks, l)
		if !ok {
			break
		}
		reps := next[part]
		reps[slices.Index(reps, from)] = to
	}
	spreadLeaders(next, parts, ids)
	plan := map[Partition][]int32{}
	for _, p := range parts {
		if !slices.Equal(next[p], current[p]) {
			plan[p] = next[p]
		}
	}
	return plan
}

// Drain plans moving every replica off broker onto the other brokers of
// racks, keeping them balanced; the broker is left the preferred leader of
// nothing.
func Drain(current map[Partition][]int32, racks map[int32]string, broker int32) map[Partition][]int32 {
	others := maps.Clone(racks)
	delete(others, broker)
	return Balance(current, others)
}

// nextMove finds one replica to move: off a broker that is not among ids
// if there is one, else from the most to the least loaded broker when
// they differ by more than one. It reports false when nothing should move
// (or nothing can).
func nextMove(next map[Partition][]int32, parts []Partition, ids []int32, racks map[int32]string, load map[int32]int) (from, to int32, part Partition, ok bool) {
	byLoad := slices.Clone(ids)
	slices.SortStableFunc(byLoad, func(a, b int32) int { return cmp.Compare(load[a], load[b]) })
	for _, p := range parts {
		for _, b := range next[p] {
			if _, known := racks[b]; !known {
				if dest, found := destination(next[p], b, byLoad, racks, true); found {
					return b, dest, p, true
				}
			}
		}
	}
	// The most loaded brokers give first; each tries its partitions in
	// order until one can go to a broker at least two replicas lighter.
	for i := len(byLoad) - 1; i > 0; i-- {
		from := byLoad[i]
		for _, p := range parts {
			if !slices.Contains(next[p], from) {
				continue
			}
			if dest, found := destination(next[p], from, byLoad, racks, false); found && load[from]-load[dest] > 1 {
				return from, dest, p, true
			}
		}
	}
	return 0, 0, Partition{}, false
}

// destination picks the least loaded broker (byLoad is lightest first)
// that may take from's replica of a partition with replicas reps: not one
// of them, and not leaving the partition on fewer racks than before. A
// forced move (off a broker that is going) takes the most racks it can
// keep when no broker keeps them all.
func destination(reps []int32, from int32, byLoad []int32, racks map[int32]string, forced bool) (int32, bool) {
	racksWith := func(b int32) int {
		after := slices.Clone(reps)
		after[slices.Index(after, from)] = b
		return rackCount(after, racks)
	}
	best := 0
	for _, b := range byLoad {
		if !slices.Contains(reps, b) {
			best = max(best, racksWith(b))
		}
	}
	need := rackCount(reps, racks)
	if forced {
		need = min(need, best)
	}
	for _, b := range byLoad {
		if !slices.Contains(reps, b) && racksWith(b) >= need {
			return b, true
		}
	}
	return 0, false
}

// rackCount counts the racks reps are on; a broker without a known rack
// counts as a rack of its own.
func rackCount(reps []int32, racks map[int32]string) int {
	seen := map[string]bool{}
	n := 0
	for _, b := range reps {
		r, ok := racks[b]
		if !ok || r == "" {
			n++
			continue
		}
		if !seen[r] {
			seen[r] = true
			n++
		}
	}
	return n
}

// spreadLeaders reorders replicas so that each broker of ids is the
// preferred leader (first replica) of about as many partitions as the
// others: a partition led by an over-represented broker takes as leader
// one of its other replicas that is under-represented.
func spreadLeaders(next map[Partition][]int32, parts []Partition, ids []int32) {
	leads := map[int32]int{}
	for _, p := range parts {
		leads[next[p][0]]++
	}
	for changed := true; changed; {
		changed = false
		for _, p := range parts {
			reps := next[p]
			for i := 1; i < len(reps); i++ {
				if leads[reps[0]]-leads[reps[i]] > 1 && slices.Contains(ids, reps[i]) {
					leads[reps[0]]--
					leads[reps[i]]++
					reps[0], reps[i] = reps[i], reps[0]
					changed = true
					break
				}
			}
		}
	}
}
