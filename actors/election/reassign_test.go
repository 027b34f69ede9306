package election

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestReassignSteps(t *testing.T) {
	live := liveSet(1, 2, 3, 4, 5)
	base := Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 9}

	// 1,2,3 -> 2,3,4: 4 is added first; the move waits for it.
	moving, changed, err := Reassign(base, []int32{2, 3, 4}, live)
	if err != nil || !changed {
		t.Fatalf("reassign: changed=%v err=%v", changed, err)
	}
	want := Partition{Replicas: []int32{2, 3, 4, 1}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 10,
		Adding: []int32{4}, Removing: []int32{1}}
	assertPartition(t, "moving", moving, want)
	if !slices.Equal(moving.Target(), []int32{2, 3, 4}) || !slices.Equal(moving.Original(), []int32{2, 3, 1}) {
		t.Fatalf("target %v original %v", moving.Target(), moving.Original())
	}
	if _, ok := Complete(moving, live); ok {
		t.Fatal("completed before the added replica was in sync")
	}

	// 4 joins the ISR: the move completes, 1 (the leader) leaves, and the
	// first in-sync target replica leads under a new epoch.
	inSync, rej := AlterISR(moving, Proposal{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 10, ISR: []int32{1, 2, 3, 4}}, live)
	if rej != nil {
		t.Fatal(rej)
	}
	done, ok := Complete(inSync, live)
	if !ok {
		t.Fatal("not completed with every target replica in sync")
	}
	assertPartition(t, "done", done, Partition{Replicas: []int32{2, 3, 4}, Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 4}, PartitionEpoch: 12})

	// Cancelled instead: back to 1,2,3 (in the merged set's order, as in
	// Kafka) with 4 out of the ISR.
	back, changed, err := Cancel(inSync, live)
	if err != nil || !changed {
		t.Fatalf("cancel: changed=%v err=%v", changed, err)
	}
	assertPartition(t, "cancelled", back, Partition{Replicas: []int32{2, 3, 1}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 12})

	// The original set as a target cancels too.
	back2, changed, err := Reassign(moving, []int32{1, 2, 3}, live)
	if err != nil || !changed {
		t.Fatalf("reassign to the original: changed=%v err=%v", changed, err)
	}
	assertPartition(t, "reassigned to the original", back2, Partition{Replicas: []int32{2, 3, 1}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 11})

	// The same replicas in another order: no move, a new preferred leader.
	reordered, changed, err := Reassign(base, []int32{3, 1, 2}, live)
	if err != nil || !changed {
		t.Fatalf("reorder: changed=%v err=%v", changed, err)
	}
	assertPartition(t, "reordered", reordered, Partition{Replicas: []int32{3, 1, 2}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 10})
	if _, changed, _ := Reassign(base, []int32{1, 2, 3}, live); changed {
		t.Fatal("reassigning to the same replicas changed the partition")
	}
	if _, changed, _ := Cancel(base, live); changed {
		t.Fatal("cancelling with no move changed the partition")
	}
}

func TestReassignShrinksAtOnceAndReplacesAMove(t *testing.T) {
	live := liveSet(1, 2, 3, 4, 5)
	base := Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 9}

	// RF 3 -> 2 adds nothing: it completes in the same write.
	shrunk, changed, err := Reassign(base, []int32{2, 3}, live)
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	assertPartition(t, "shrunk", shrunk, Partition{Replicas: []int32{2, 3}, Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}, PartitionEpoch: 10})

	// RF 3 -> 2 with the remaining replica out of the ISR waits for it.
	lagging := base
	lagging.ISR = []int32{1, 2}
	wait, _, err := Reassign(lagging, []int32{1, 3}, live)
	if err != nil || !wait.Reassigning() {
		t.Fatalf("a target replica out of the ISR: %+v err=%v", wait, err)
	}

	// A move replaced by another: 4, which the first added and which
	// joined the ISR, leaves the ISR; 5 is added instead.
	// (3 is out of the ISR, so 4 joining does not complete the move).
	moving, _, _ := Reassign(lagging, []int32{1, 2, 4}, live)
	moving.ISR = []int32{1, 2, 4}
	replaced, changed, err := Reassign(moving, []int32{1, 2, 5}, live)
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	assertPartition(t, "replaced", replaced, Partition{Replicas: []int32{1, 2, 5, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2},
		PartitionEpoch: 11, Adding: []int32{5}, Removing: []int32{3}})
}

func TestReassignRefusesWhatWouldLoseData(t *testing.T) {
	live := liveSet(1, 2, 3, 4)
	if err := ValidateTarget(nil, live); err == nil {
		t.Error("empty target accepted")
	}
	if err := ValidateTarget([]int32{1, 1}, live); err == nil {
		t.Error("a broker twice accepted")
	}
	if err := ValidateTarget([]int32{1, 9}, live); err == nil {
		t.Error("a broker that is not live accepted")
	}

	// A move whose added replica became the only in-sync one (its leader
	// elected from it) cannot be cancelled: no original replica has it all.
	p := Partition{Replicas: []int32{4, 1}, Leader: 4, LeaderEpoch: 6, ISR: []int32{4}, PartitionEpoch: 12,
		Adding: []int32{4}, Removing: []int32{1}}
	if _, _, err := Cancel(p, live); err == nil {
		t.Error("cancel with no original replica in sync accepted")
	}

	// Unclean election never picks a replica being added.
	offline := Partition{Replicas: []int32{4, 1}, Leader: NoLeader, LeaderEpoch: 6, ISR: []int32{1}, PartitionEpoch: 12,
		Adding: []int32{4}, Removing: []int32{1}}
	if got, changed := OnLiveBrokers(offline, liveSet(4), true); changed && got.Leader == 4 {
		t.Errorf("unclean election chose the replica being added: %+v", got)
	}
}

// A random walk of moves, cancels, ISR growth and broker deaths never
// leaves the ISR empty while a leader leads, never puts a non-replica in
// the ISR, and always keeps the leader in the ISR.
func TestReassignRandomWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := []int32{1, 2, 3, 4, 5}
	for run := 0; run < 200; run++ {
		p := Partition{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}}
		alive := map[int32]bool{1: true, 2: true, 3: true, 4: true, 5: true}
		live := func(id int32) (Member, bool) { return Member{}, alive[id] }
		for step := 0; step < 30; step++ {
			switch rng.IntN(4) {
			case 0:
				target := slices.Clone(all)
				rng.Shuffle(len(target), func(i, j int) { target[i], target[j] = target[j], target[i] })
				target = target[:1+rng.IntN(3)]
				if ValidateTarget(target, live) == nil {
					if next, changed, err := Reassign(p, target, live); err == nil && changed {
						p = next
					}
				}
			case 1:
				if next, changed, err := Cancel(p, live); err == nil && changed {
					p = next
				}
			case 2: // a replica out of the ISR catches up
				if p.Leader == NoLeader {
					continue
				}
				for _, id := range p.Replicas {
					if !slices.Contains(p.ISR, id) && alive[id] {
						isr := append(slices.Clone(p.ISR), id)
						next, rej := AlterISR(p, Proposal{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: isr}, live)
						if rej == nil {
							p = next
							if done, ok := Complete(p, live); ok {
								p = done
							}
						}
						break
					}
				}
			case 3: // a broker dies or comes back
				id := all[rng.IntN(len(all))]
				alive[id] = !alive[id]
				if next, changed := OnLiveBrokers(p, live, false); changed {
					p = next
				}
				if done, ok := Complete(p, live); ok {
					p = done
				}
			}
			if len(p.ISR) == 0 {
				t.Fatalf("run %d step %d: empty ISR: %+v", run, step, p)
			}
			if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
				t.Fatalf("run %d step %d: leader outside the ISR: %+v", run, step, p)
			}
			for _, id := range p.ISR {
				if !slices.Contains(p.Replicas, id) {
					t.Fatalf("run %d step %d: ISR member %d not a replica: %+v", run, step, id, p)
				}
			}
			for _, id := range append(slices.Clone(p.Adding), p.Removing...) {
				if !slices.Contains(p.Replicas, id) {
					t.Fatalf("run %d step %d: moving replica %d not a replica: %+v", run, step, id, p)
				}
			}
		}
	}
}

func assertPartition(t *testing.T, what string, got, want Partition) {
	t.Helper()
	if !slices.Equal(got.Replicas, want.Replicas) || got.Leader != want.Leader || got.LeaderEpoch != want.LeaderEpoch ||
		!slices.Equal(got.ISR, want.ISR) || got.PartitionEpoch != want.PartitionEpoch ||
		!slices.Equal(got.Adding, want.Adding) || !slices.Equal(got.Removing, want.Removing) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}
