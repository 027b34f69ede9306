// Package placement decides where a new topic's partition replicas go, as
// plain Go with no I/O: replicas spread round-robin over the live brokers,
// with the leader (first replica) of consecutive partitions on consecutive
// brokers and followers shifted so that no two partitions share the same
// follower order (Kafka's assignReplicasToBrokers without racks).
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
	if rf < 1 || rf > n {
		return nil, fmt.Errorf("replication factor %d needs %d live brokers, %d are alive", rf, rf, n)
	}
	if partitions < 1 {
		return nil, fmt.Errorf("partitions must be at least 1, got %d", partitions)
	}
	ids := slices.Clone(brokers)
	slices.Sort(ids)
	start = mod(start, n)
	shift = mod(shift, n)
	out := make([][]int32, partitions)
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (start + p) % n
		replicas := []int32{ids[first]}
		for j := 0; j < rf-1; j++ {
			replicas = append(replicas, ids[followerIndex(first, j, shift, n)])
		}
		out[p] = replicas
	}
	return out, nil
}

// followerIndex places follower j of a partition led by broker index first.
func followerIndex(first, j, shift, n int) int {
	gap := 1 + (shift+j)%(n-1)
	return (first + gap) % n
}

func mod(a, n int) int { return ((a % n) + n) % n }
