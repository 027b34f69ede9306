// Package placement decides where partition replicas go, as plain Go with
// no I/O: at creation (Assign, AssignWithRacks) and when brokers come and
// go (Balance, Drain: the plans a reassignment carries out). New replicas
// spread round-robin over the live brokers, with the leader (first
// replica) of consecutive partitions on consecutive brokers and followers
// shifted so that no two partitions share the same follower order (Kafka's
// assignReplicasToBrokers); with racks, replicas of a partition also go to
// different racks (AssignWithRacks).
package placement

import (
	"fmt"
	"slices"
)

// Assign returns, for each of partitions partitions, rf distinct broker ids
// from brokers, preferred leader first. start picks the broker of partition
// 0's leader and shift the first follower offset; pass random values so that
// topics do not all start on the same broker.
func Assign(brokers []int32, partitions, rf, start, shift int) ([][]int32, error) {
	n := len(brokers)
	if err := check(n, partitions, rf); err != nil {
		return nil, err
	}
	ids := slices.Clone(brokers)
	slices.Sort(ids)
	return spread(ids, partitions, start, shift, func(first, shift int) []int32 {
		replicas := []int32{ids[first]}
		for j := 0; j < rf-1; j++ {
			replicas = append(replicas, ids[followerIndex(first, j, shift, n)])
		}
		return replicas
	}), nil
}

// spread places partitions over order: partition p is led by
// order[(start+p) % n], and followers picks its replicas from the index of
// that leader and the round's shift, which grows by one every n
// partitions so that rounds do not repeat the same follower order.
func spread(order []int32, partitions, start, shift int, followers func(first, shift int) []int32) [][]int32 {
	n := len(order)
	start, shift = mod(start, n), mod(shift, n)
	out := make([][]int32, partitions)
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		out[p] = followers((start+p)%n, shift)
	}
	return out
}

// check refuses what n live brokers cannot hold.
func check(n, partitions, rf int) error {
	if rf < 1 || rf > n {
		return fmt.Errorf("replication factor %d needs %d live brokers, %d are alive", rf, rf, n)
	}
	if partitions < 1 {
		return fmt.Errorf("partitions must be at least 1, got %d", partitions)
	}
	return nil
}

// followerIndex places follower j of a partition led by broker index first.
func followerIndex(first, j, shift, n int) int {
	gap := 1 + (shift+j)%(n-1)
	return (first + gap) % n
}

func mod(a, n int) int { return ((a % n) + n) % n }

// AssignWithRacks is Assign over the brokers of racks (broker id to rack
// name). When every broker names a rack and there are at least two, a
// partition's replicas go to as many different racks as they can (Kafka's
// rack-aware assignment): the brokers are ordered so that racks alternate,
// leaders go round-robin over that order as before, and a follower is
// taken from a rack the partition has no replica on yet while there is
// one. Otherwise it is Assign.
func AssignWithRacks(racks map[int32]string, partitions, rf, start, shift int) ([][]int32, error) {
	ids := make([]int32, 0, len(racks))
	names := map[string]bool{}
	aware := true
	for id, rack := range racks {
		ids = append(ids, id)
		names[rack] = true
		aware = aware && rack != ""
	}
	slices.Sort(ids)
	if !aware || len(names) < 2 {
		return Assign(ids, partitions, rf, start, shift)
	}
	n := len(ids)
	if err := check(n, partitions, rf); err != nil {
		return nil, err
	}
	ordered := rackAlternated(ids, racks)
	return spread(ordered, partitions, start, shift, func(first, shift int) []int32 {
		replicas := []int32{ordered[first]}
		used := map[string]bool{racks[ordered[first]]: true}
		// The first pass takes only brokers of racks not used yet (while
		// some are left); the second fills what remains in the same order.
		for pass := 0; pass < 2 && len(replicas) < rf; pass++ {
			for j := 0; j < n-1 && len(replicas) < rf; j++ {
				b := ordered[followerIndex(first, j, shift, n)]
				if slices.Contains(replicas, b) || pass == 0 && used[racks[b]] && len(used) < len(names) {
					continue
				}
				replicas = append(replicas, b)
				used[racks[b]] = true
			}
		}
		return replicas
	}), nil
}

// rackAlternated lists ids so that racks take turns: the first broker of
// each rack (racks in name order), then the second of each, and so on.
func rackAlternated(ids []int32, racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	var names []string
	for _, id := range ids {
		r := racks[id]
		if len(byRack[r]) == 0 {
			names = append(names, r)
		}
		byRack[r] = append(byRack[r], id)
	}
	slices.Sort(names)
	out := make([]int32, 0, len(ids))
	for i := 0; len(out) < len(ids); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}
