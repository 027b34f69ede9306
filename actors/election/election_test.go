package election

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// liveSet is brokers ids alive, their epochs unknown.
func liveSet(ids ...int32) Live {
	return func(id int32) (Member, bool) { return Member{}, slices.Contains(ids, id) }
}

// epochs is the brokers of m alive under the given epochs, directories unknown.
func epochs(m map[int32]int64) Live {
	return func(id int32) (Member, bool) { e, ok := m[id]; return Member{Epoch: e}, ok }
}

// members is the brokers of m alive as the given runs.
func members(m map[int32]Member) Live {
	return func(id int32) (Member, bool) { r, ok := m[id]; return r, ok }
}

func TestOnLiveBrokers(t *testing.T) {
	base := Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, PartitionEpoch: 9}
	cases := []struct {
		name    string
		p       Partition
		live    []int32
		unclean bool
		want    Partition
		changed bool
	}{
		{"all alive", base, []int32{1, 2, 3}, false, base, false},
		{"follower dies: leaves the ISR, epoch kept", base, []int32{1, 3}, false,
			Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}, PartitionEpoch: 10}, true},
		{"leader dies: next ISR member in replica order", base, []int32{2, 3}, false,
			Partition{Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}, PartitionEpoch: 10}, true},
		{"leader and follower die at once: offline, the ISR keeps the leader",
			Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2}, PartitionEpoch: 9}, []int32{3}, false,
			Partition{Replicas: []int32{1, 2, 3}, Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 10}, true},
		{"leader dies, only an out-of-sync replica left: offline, ISR kept",
			Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, PartitionEpoch: 9}, []int32{2, 3}, false,
			Partition{Replicas: []int32{1, 2, 3}, Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 10}, true},
		{"same, unclean allowed: first live replica",
			Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, PartitionEpoch: 9}, []int32{2, 3}, true,
			Partition{Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 5, ISR: []int32{2}, PartitionEpoch: 10}, true},
		{"offline stays offline while no ISR member is back",
			Partition{Replicas: []int32{1, 2}, Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 10}, []int32{2}, false,
			Partition{Replicas: []int32{1, 2}, Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 10}, false},
		{"last ISR member returns: it leads",
			Partition{Replicas: []int32{1, 2}, Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 10}, []int32{1, 2}, false,
			Partition{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 6, ISR: []int32{1}, PartitionEpoch: 11}, true},
	}
	for _, c := range cases {
		got, changed := OnLiveBrokers(c.p, liveSet(c.live...), c.unclean)
		if changed != c.changed || got.Leader != c.want.Leader || got.LeaderEpoch != c.want.LeaderEpoch ||
			got.PartitionEpoch != c.want.PartitionEpoch || !slices.Equal(got.ISR, c.want.ISR) {
			t.Errorf("%s: got %+v changed=%v, want %+v changed=%v", c.name, got, changed, c.want, c.changed)
		}
	}
}

func TestAlterISR(t *testing.T) {
	p := Partition{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2}, PartitionEpoch: 9}
	live := liveSet(1, 2, 3)
	next, rej := AlterISR(p, Proposal{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, ISR: []int32{3, 1, 2}}, live)
	if rej != nil || !slices.Equal(next.ISR, []int32{1, 2, 3}) || next.PartitionEpoch != 10 || next.LeaderEpoch != 4 {
		t.Fatalf("expand: %+v %v", next, rej)
	}
	for name, c := range map[string]struct {
		prop Proposal
		live Live
		code RejectCode
	}{
		"old leader epoch":    {Proposal{1, 3, 9, []int32{1}, nil}, live, RejectFencedEpoch},
		"not the leader":      {Proposal{2, 4, 9, []int32{2}, nil}, live, RejectFencedEpoch},
		"old partition epoch": {Proposal{1, 4, 8, []int32{1}, nil}, live, RejectStalePartitionEpoch},
		"leader left out":     {Proposal{1, 4, 9, []int32{2}, nil}, live, RejectInvalid},
		"not a replica":       {Proposal{1, 4, 9, []int32{1, 7}, nil}, live, RejectInvalid},
		"duplicate member":    {Proposal{1, 4, 9, []int32{1, 1}, nil}, live, RejectInvalid},
		"dead member joins":   {Proposal{1, 4, 9, []int32{1, 2, 3}, nil}, liveSet(1, 2), RejectInvalid},
		"restarted since it fetched": {Proposal{1, 4, 9, []int32{1, 2, 3}, map[int32]int64{3: 7}},
			epochs(map[int32]int64{1: 1, 2: 2, 3: 8}), RejectStaleBrokerEpoch},
	} {
		if _, rej := AlterISR(p, c.prop, c.live); rej == nil || rej.Code != c.code {
			t.Errorf("%s: rejection %v, want code %d", name, rej, c.code)
		}
	}
}

// Randomized: whatever brokers come and go, a leader is always a live ISR
// member (clean election), epochs never go down, and the leader epoch rises
// with every leader change.
func TestElectionInvariantsRandomized(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := Partition{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}}
		for step := 0; step < 50; step++ {
			var live []int32
			for _, id := range p.Replicas {
				if rng.IntN(3) > 0 {
					live = append(live, id)
				}
			}
			prev := p
			next, changed := OnLiveBrokers(p, liveSet(live...), false)
			if !changed {
				continue
			}
			if next.Leader != NoLeader && (!slices.Contains(live, next.Leader) || !slices.Contains(prev.ISR, next.Leader)) {
				t.Fatalf("seed %d: leader %d is not a live member of ISR %v (live %v)", seed, next.Leader, prev.ISR, live)
			}
			if next.Leader != prev.Leader && next.LeaderEpoch <= prev.LeaderEpoch {
				t.Fatalf("seed %d: leader changed without an epoch bump", seed)
			}
			if next.PartitionEpoch <= prev.PartitionEpoch || next.LeaderEpoch < prev.LeaderEpoch {
				t.Fatalf("seed %d: epochs went back", seed)
			}
			if len(next.ISR) == 0 {
				t.Fatalf("seed %d: empty ISR", seed)
			}
			if next.Leader != NoLeader && !slices.Contains(next.ISR, next.Leader) {
				t.Fatalf("seed %d: leader outside its ISR", seed)
			}
			p = next
			// A follower that comes back may be re-added by its leader.
			if p.Leader != NoLeader && rng.IntN(2) == 0 {
				for _, id := range live {
					if !slices.Contains(p.ISR, id) {
						if n, rej := AlterISR(p, Proposal{p.Leader, p.LeaderEpoch, p.PartitionEpoch, append(slices.Clone(p.ISR), id), nil}, liveSet(live...)); rej == nil {
							p = n
						}
						break
					}
				}
			}
		}
	}
}

// A broker that restarted (a new broker epoch) is not in sync, whatever the
// ISR says: it may have lost its log.
func TestRestartedBrokerIsNotInSync(t *testing.T) {
	p := Partition{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, PartitionEpoch: 5,
		ISREpochs: map[int32]int64{1: 10, 2: 20}}
	// Follower 2 restarted (epoch 21) while the leader lives: it leaves the ISR.
	next, changed := OnLiveBrokers(p, epochs(map[int32]int64{1: 10, 2: 21}), false)
	if !changed || next.Leader != 1 || !slices.Equal(next.ISR, []int32{1}) || next.LeaderEpoch != 3 || next.ISREpochs[2] != 0 {
		t.Fatalf("restarted follower: %+v", next)
	}
	// Then the leader dies: 2 is alive but not in sync, so nobody leads and
	// the ISR keeps the last leader.
	off, changed := OnLiveBrokers(next, epochs(map[int32]int64{2: 21}), false)
	if !changed || off.Leader != NoLeader || !slices.Equal(off.ISR, []int32{1}) {
		t.Fatalf("leader dead, restarted follower alive: %+v", off)
	}
	// Both at once (the controller saw them in one update): the same.
	both, _ := OnLiveBrokers(p, epochs(map[int32]int64{2: 21}), false)
	if both.Leader != NoLeader || !slices.Equal(both.ISR, []int32{1}) {
		t.Fatalf("leader dead and follower restarted at once: %+v", both)
	}
	// The last leader returns under a new epoch: it leads, recorded anew.
	back, changed := OnLiveBrokers(off, epochs(map[int32]int64{1: 11, 2: 21}), false)
	if !changed || back.Leader != 1 || back.LeaderEpoch <= off.LeaderEpoch || back.ISREpochs[1] != 11 {
		t.Fatalf("last leader back: %+v", back)
	}
	// The restarted leader of an in-sync pair hands over to the follower.
	moved, _ := OnLiveBrokers(p, epochs(map[int32]int64{1: 11, 2: 20}), false)
	if moved.Leader != 2 || !slices.Equal(moved.ISR, []int32{2}) {
		t.Fatalf("restarted leader: %+v", moved)
	}
	// Unknown recorded epochs are filled in, not taken for restarts.
	legacy := p
	legacy.ISREpochs = nil
	filled, changed := OnLiveBrokers(legacy, epochs(map[int32]int64{1: 10, 2: 20}), false)
	if !changed || !slices.Equal(filled.ISR, []int32{1, 2}) || filled.ISREpochs[1] != 10 || filled.ISREpochs[2] != 20 || filled.LeaderEpoch != 3 {
		t.Fatalf("legacy state: %+v", filled)
	}
	if _, changed := OnLiveBrokers(filled, epochs(map[int32]int64{1: 10, 2: 20}), false); changed {
		t.Fatal("a settled state changed again")
	}
}

// The only in-sync replica restarting (a single broker's restart) keeps
// leading under the same leader epoch; only its recorded broker epoch moves.
func TestRestartOfTheOnlyReplica(t *testing.T) {
	p := Partition{Replicas: []int32{0}, Leader: 0, LeaderEpoch: 2, ISR: []int32{0}, PartitionEpoch: 4, ISREpochs: map[int32]int64{0: 3}}
	next, changed := OnLiveBrokers(p, epochs(map[int32]int64{0: 4}), false)
	if !changed || next.Leader != 0 || next.LeaderEpoch != 2 || next.PartitionEpoch != 5 || next.ISREpochs[0] != 4 {
		t.Fatalf("after a restart: %+v", next)
	}
}

// The last in-sync replica leads again after a restart only on the data
// directory it was in sync with: on a new one (a replaced disk) its log is
// gone, and the partition stays offline.
func TestLastReplicaLeadsOnlyWithItsDirectory(t *testing.T) {
	off := Partition{Replicas: []int32{1, 2}, Leader: NoLeader, LeaderEpoch: 4, ISR: []int32{1}, PartitionEpoch: 7,
		ISREpochs: map[int32]int64{1: 10}, ISRDirs: map[int32]string{1: "disk-a"}}
	if next, changed := OnLiveBrokers(off, members(map[int32]Member{1: {Epoch: 11, Dir: "disk-b"}, 2: {Epoch: 3, Dir: "disk-c"}}), false); changed {
		t.Fatalf("the last replica on a new directory was elected: %+v", next)
	}
	next, changed := OnLiveBrokers(off, members(map[int32]Member{1: {Epoch: 11, Dir: "disk-a"}}), false)
	if !changed || next.Leader != 1 || next.ISREpochs[1] != 11 || next.ISRDirs[1] != "disk-a" {
		t.Fatalf("the last replica back on its directory: %+v", next)
	}
	// A topic's first state records the directories; the ISR keeps them.
	p := Partition{Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, PartitionEpoch: 1}
	live := members(map[int32]Member{1: {Epoch: 5, Dir: "a"}, 2: {Epoch: 6, Dir: "b"}})
	filled, _ := OnLiveBrokers(p, live, false)
	if filled.ISRDirs[1] != "a" || filled.ISRDirs[2] != "b" {
		t.Fatalf("directories not recorded: %+v", filled)
	}
}
