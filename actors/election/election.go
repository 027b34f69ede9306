// Package election is the controller's decision logic as plain Go: which
// replica leads a partition after brokers come and go, and whether a
// leader's proposed ISR change may be committed. Leaders come only from the
// ISR unless the topic allows unclean election; every leader change bumps
// the leader epoch and every change bumps the partition epoch.
//
// The ISR records, for each member, the broker epoch it was in sync under
// (KIP-380, KIP-903). A member whose broker now runs under another epoch
// has restarted and may have lost its log: it is no longer in sync, and it
// only returns through the leader's ISR expansion once it has caught up.
//
//	next, changed := election.OnLiveBrokers(state, live, false)
//	if changed { /* write next with check-and-set, tell the brokers */ }
//
// This package must not import protoactor, storage, consul or the network.
package election

import (
	"fmt"
	"maps"
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
	// ISREpochs is the broker epoch each ISR member was in sync under;
	// a missing or zero entry is not known (and matches any epoch).
	ISREpochs map[int32]int64
}

// Clone returns a deep copy of p.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.ISREpochs = maps.Clone(p.ISREpochs)
	return p
}

// Live tells whether broker id is alive, and its current broker epoch (0:
// not known).
type Live func(id int32) (epoch int64, alive bool)

// inSync reports whether ISR member id is alive under the epoch p records.
func (p Partition) inSync(id int32, live Live) bool {
	epoch, alive := live(id)
	recorded := p.ISREpochs[id]
	return alive && (recorded == 0 || epoch == 0 || recorded == epoch)
}

// withEpochs returns the epochs of the members of isr: the recorded ones,
// with unknown ones filled in from live.
func (p Partition) withEpochs(isr []int32, live Live) map[int32]int64 {
	out := make(map[int32]int64, len(isr))
	for _, id := range isr {
		e := p.ISREpochs[id]
		if cur, alive := live(id); e == 0 && alive {
			e = cur
		}
		if e != 0 {
			out[id] = e
		}
	}
	return out
}

// OnLiveBrokers returns p updated for the live brokers and their epochs. An
// ISR member is in sync while it is alive under the broker epoch the ISR
// records for it:
//   - an in-sync leader keeps leading; members that are not in sync (dead,
//     or restarted since) leave the ISR;
//   - otherwise the first in-sync ISR member in replica order leads;
//   - with none, an unclean election (if allowed) takes the first live
//     replica with an ISR of itself; otherwise the ISR keeps one member,
//     the last leader if it was in it (its log holds everything committed),
//     and the partition is offline until that member is alive: it then
//     leads whatever its epoch, being the last in-sync replica there is.
//
// changed is false when p needs no write.
func OnLiveBrokers(p Partition, live Live, unclean bool) (next Partition, changed bool) {
	next = p.Clone()
	inSync := filter(p.ISR, func(id int32) bool { return p.inSync(id, live) })
	if p.Leader != NoLeader && slices.Contains(inSync, p.Leader) {
		epochs := p.withEpochs(inSync, live)
		if len(inSync) == len(p.ISR) && maps.Equal(epochs, nonZero(p.ISREpochs, inSync)) {
			return p, false
		}
		next.ISR, next.ISREpochs = inSync, epochs
		next.PartitionEpoch++
		return next, true
	}
	if leader, ok := first(p.Replicas, func(id int32) bool { return slices.Contains(inSync, id) }); ok {
		next.Leader = leader
		next.ISR, next.ISREpochs = inSync, p.withEpochs(inSync, live)
	} else if leader, ok := first(p.Replicas, isAlive(live)); ok && unclean {
		next.Leader = leader
		next.ISR = []int32{leader}
		next.ISREpochs = currentEpochs(next.ISR, live)
	} else {
		last := p.ISR
		if len(p.ISR) > 1 {
			last = p.ISR[:1]
			if slices.Contains(p.ISR, p.Leader) {
				last = []int32{p.Leader}
			}
		}
		if len(last) == 1 && isAlive(live)(last[0]) {
			// The last in-sync replica is back (after a restart): it leads.
			next.Leader = last[0]
			next.ISR = slices.Clone(last)
			next.ISREpochs = currentEpochs(last, live)
		} else {
			if p.Leader == NoLeader && len(p.ISR) == len(last) {
				return p, false // already offline; wait for the last ISR member
			}
			next.Leader = NoLeader
			next.ISR = slices.Clone(last)
			next.ISREpochs = nonZero(p.ISREpochs, last)
		}
	}
	if next.Leader == p.Leader && slices.Equal(next.ISR, p.ISR) && maps.Equal(next.ISREpochs, p.ISREpochs) {
		return p, false
	}
	if next.Leader != p.Leader {
		// A leader that restarted and leads on keeps its epoch: followers
		// copy only what it had made durable, so its log cannot have lost
		// anything they hold.
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	return next, true
}

func isAlive(live Live) func(int32) bool {
	return func(id int32) bool { _, ok := live(id); return ok }
}

// currentEpochs is the live epochs of ids.
func currentEpochs(ids []int32, live Live) map[int32]int64 {
	out := map[int32]int64{}
	for _, id := range ids {
		if e, ok := live(id); ok && e != 0 {
			out[id] = e
		}
	}
	return out
}

// nonZero is the entries of epochs for ids (nil-safe, zeros dropped).
func nonZero(epochs map[int32]int64, ids []int32) map[int32]int64 {
	out := map[int32]int64{}
	for _, id := range ids {
		if e := epochs[id]; e != 0 {
			out[id] = e
		}
	}
	return out
}

// Proposal is a leader's request to change the ISR.
type Proposal struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	// Epochs is the broker epoch of each member as the leader saw it fetch.
	Epochs map[int32]int64
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
	// RejectStaleBrokerEpoch: a member the proposal adds has restarted
	// since the leader saw it fetch.
	RejectStaleBrokerEpoch
)

// AlterISR checks a proposal against the current state and returns the
// state to commit: the proposed ISR with the partition epoch bumped.
// Members the proposal adds must be alive under the broker epoch the
// leader saw them fetch with, and the leader must stay in.
func AlterISR(p Partition, prop Proposal, live Live) (Partition, *Rejection) {
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
	epochs := map[int32]int64{}
	for _, id := range prop.ISR {
		if seen[id] || !slices.Contains(p.Replicas, id) {
			return p, &Rejection{RejectInvalid, fmt.Sprintf("ISR %v is not a set of the replicas %v", prop.ISR, p.Replicas)}
		}
		seen[id] = true
		current, alive := live(id)
		proposed := prop.Epochs[id]
		if !slices.Contains(p.ISR, id) {
			if !alive {
				return p, &Rejection{RejectInvalid, fmt.Sprintf("broker %d is not alive and cannot join the ISR", id)}
			}
			if proposed != 0 && current != 0 && proposed != current {
				return p, &Rejection{RejectStaleBrokerEpoch, fmt.Sprintf("broker %d fetched under broker epoch %d but now runs under %d",
					id, proposed, current)}
			}
		}
		switch {
		case slices.Contains(p.ISR, id) && p.ISREpochs[id] != 0:
			epochs[id] = p.ISREpochs[id]
		case proposed != 0:
			epochs[id] = proposed
		case alive && current != 0:
			epochs[id] = current
		}
	}
	next := p.Clone()
	next.ISR = slices.Clone(prop.ISR)
	slices.Sort(next.ISR)
	next.ISREpochs = epochs
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
