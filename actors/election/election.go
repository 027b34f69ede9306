// Package election is the controller's decision logic as plain Go: which
// replica leads a partition after brokers come and go, and whether a
// leader's proposed ISR change may be committed. Leaders come only from the
// ISR unless the topic allows unclean election; every leader change bumps
// the leader epoch and every change bumps the partition epoch.
//
//	next, changed := election.OnLiveBrokers(state, live, false)
//	if changed { /* write next with check-and-set, tell the brokers */ }
//
// This package must not import protoactor, storage, consul or the network.
package election

import (
	"fmt"
	"slices"
)

// NoLeader marks an offline partition.
const NoLeader = -1

// Partition is the part of a partition's state the controller decides on.
type Partition struct {
	Replicas       []int32 // assigned replicas, preferred leader first
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

// Clone returns a deep copy of p.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	return p
}

// OnLiveBrokers returns p updated for the set of live brokers:
//   - a live leader keeps leading; in-sync followers that are not live leave
//     the ISR (they cannot acknowledge anything);
//   - a partition whose leader is dead or absent gets the first live ISR
//     member in replica order, and the ISR loses the dead members;
//   - with no live ISR member, an unclean election (if allowed) takes the
//     first live replica with an ISR of itself; otherwise the partition goes
//     offline with its ISR unchanged, so that the last in-sync replica can
//     lead again when it returns.
//
// changed is false when p needs no write.
func OnLiveBrokers(p Partition, live func(int32) bool, unclean bool) (next Partition, changed bool) {
	next = p.Clone()
	if p.Leader != NoLeader && live(p.Leader) {
		isr := filter(p.ISR, func(id int32) bool { return id == p.Leader || live(id) })
		if len(isr) == len(p.ISR) {
			return p, false
		}
		next.ISR = isr
		next.PartitionEpoch++
		return next, true
	}
	if leader, ok := first(p.Replicas, func(id int32) bool { return live(id) && slices.Contains(p.ISR, id) }); ok {
		next.Leader = leader
		next.ISR = filter(p.ISR, live)
	} else if leader, ok := first(p.Replicas, live); ok && unclean {
		next.Leader = leader
		next.ISR = []int32{leader}
	} else {
		if p.Leader == NoLeader {
			return p, false // already offline; wait for an ISR member
		}
		next.Leader = NoLeader
	}
	next.LeaderEpoch++
	next.PartitionEpoch++
	return next, true
}

// Proposal is a leader's request to change the ISR.
type Proposal struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// Rejection says why a proposal was refused; Code names the error.
type Rejection struct {
	Code   RejectCode
	Reason string
}

func (r *Rejection) Error() string { return r.Reason }

// RejectCode classifies a refused proposal.
type RejectCode int

const (
	// RejectFencedEpoch: the proposer is not the current leader or its
	// leader epoch is old.
	RejectFencedEpoch RejectCode = iota + 1
	// RejectStalePartitionEpoch: the proposal was made from an old state.
	RejectStalePartitionEpoch
	// RejectInvalid: the ISR is not a valid set for this partition.
	RejectInvalid
)

// AlterISR checks a proposal against the current state and returns the
// state to commit: the proposed ISR with the partition epoch bumped.
// Members the proposal adds must be live, and the leader must stay in.
func AlterISR(p Partition, prop Proposal, live func(int32) bool) (Partition, *Rejection) {
	switch {
	case prop.Leader != p.Leader || prop.LeaderEpoch != p.LeaderEpoch:
		return p, &Rejection{RejectFencedEpoch, fmt.Sprintf("proposal from leader %d at epoch %d; current leader %d at epoch %d",
			prop.Leader, prop.LeaderEpoch, p.Leader, p.LeaderEpoch)}
	case prop.PartitionEpoch != p.PartitionEpoch:
		return p, &Rejection{RejectStalePartitionEpoch, fmt.Sprintf("proposal made at partition epoch %d; current %d",
			prop.PartitionEpoch, p.PartitionEpoch)}
	case !slices.Contains(prop.ISR, p.Leader):
		return p, &Rejection{RejectInvalid, fmt.Sprintf("ISR %v leaves out the leader %d", prop.ISR, p.Leader)}
	}
	seen := map[int32]bool{}
	for _, id := range prop.ISR {
		if seen[id] || !slices.Contains(p.Replicas, id) {
			return p, &Rejection{RejectInvalid, fmt.Sprintf("ISR %v is not a set of the replicas %v", prop.ISR, p.Replicas)}
		}
		seen[id] = true
		if !slices.Contains(p.ISR, id) && !live(id) {
			return p, &Rejection{RejectInvalid, fmt.Sprintf("broker %d is not alive and cannot join the ISR", id)}
		}
	}
	next := p.Clone()
	next.ISR = slices.Clone(prop.ISR)
	slices.Sort(next.ISR)
	next.PartitionEpoch++
	return next, nil
}

func filter(ids []int32, keep func(int32) bool) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	return out
}

func first(ids []int32, ok func(int32) bool) (int32, bool) {
	for _, id := range ids {
		if ok(id) {
			return id, true
		}
	}
	return NoLeader, false
}
