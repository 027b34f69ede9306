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
	// ISRDirs is the data directory id each ISR member was in sync with
	// (missing: not known). A member whose directory changed lost its log.
	ISRDirs map[int32]string
	// Adding and Removing are, during a reassignment (reassign.go), the
	// replicas the move adds and those it takes away; both are in Replicas.
	Adding, Removing []int32
}

// Clone returns a deep copy of p.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.ISREpochs = maps.Clone(p.ISREpochs)
	p.ISRDirs = maps.Clone(p.ISRDirs)
	p.Adding = slices.Clone(p.Adding)
	p.Removing = slices.Clone(p.Removing)
	return p
}

// Member is a live broker's run: its broker epoch (0: not known) and the id
// of its data directory ("": not known).
type Member struct {
	Epoch int64
	Dir   string
}

// Live tells whether broker id is alive, and as which run.
type Live func(id int32) (m Member, alive bool)

// inSync reports whether ISR member id is alive under the epoch p records.
func (p Partition) inSync(id int32, live Live) bool {
	m, alive := live(id)
	recorded := p.ISREpochs[id]
	return alive && (recorded == 0 || m.Epoch == 0 || recorded == m.Epoch)
}

// sameDir reports whether member id runs on the data directory p records
// for it (or either is not known).
func (p Partition) sameDir(id int32, live Live) bool {
	m, alive := live(id)
	recorded := p.ISRDirs[id]
	return alive && (recorded == "" || m.Dir == "" || recorded == m.Dir)
}

// withEpochs returns the epochs and directories of the members of isr: the
// recorded ones, with unknown ones filled in from live.
func (p Partition) withEpochs(isr []int32, live Live) (map[int32]int64, map[int32]string) {
	epochs, dirs := make(map[int32]int64, len(isr)), make(map[int32]string, len(isr))
	for _, id := range isr {
		e, d := p.ISREpochs[id], p.ISRDirs[id]
		if cur, alive := live(id); alive {
			if e == 0 {
				e = cur.Epoch
			}
			if d == "" {
				d = cur.Dir
			}
		}
		if e != 0 {
			epochs[id] = e
		}
		if d != "" {
			dirs[id] = d
		}
	}
	return epochs, dirs
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
//     and the partition is offline until that member is alive again on the
//     same data directory: it then leads whatever its epoch, being the last
//     in-sync replica there is. On a new directory (a replaced disk) it has
//     lost the log, and the partition stays offline (unclean election is
//     the operator's way out).
//
// changed is false when p needs no write.
func OnLiveBrokers(p Partition, live Live, unclean bool) (next Partition, changed bool) {
	next = p.Clone()
	inSync := filter(p.ISR, func(id int32) bool { return p.inSync(id, live) })
	if p.Leader != NoLeader && slices.Contains(inSync, p.Leader) {
		epochs, dirs := p.withEpochs(inSync, live)
		if len(inSync) == len(p.ISR) && maps.Equal(epochs, nonZero(p.ISREpochs, inSync)) &&
			maps.Equal(dirs, nonEmpty(p.ISRDirs, inSync)) {
			return p, false
		}
		next.ISR, next.ISREpochs, next.ISRDirs = inSync, epochs, dirs
		next.PartitionEpoch++
		return next, true
	}
	if leader, ok := first(p.Replicas, func(id int32) bool { return slices.Contains(inSync, id) }); ok {
		next.Leader = leader
		next.ISR = inSync
		next.ISREpochs, next.ISRDirs = p.withEpochs(inSync, live)
	} else if leader, ok := first(p.Original(), isAlive(live)); ok && unclean {
		// Not a replica a move is adding: it may hold nothing yet.
		next.Leader = leader
		next.ISR = []int32{leader}
		next.ISREpochs, next.ISRDirs = current(next.ISR, live)
	} else {
		last := p.ISR
		if len(p.ISR) > 1 {
			last = p.ISR[:1]
			if slices.Contains(p.ISR, p.Leader) {
				last = []int32{p.Leader}
			}
		}
		if len(last) == 1 && p.sameDir(last[0], live) {
			// The last in-sync replica is back (after a restart) with its
			// log: it leads.
			next.Leader = last[0]
			next.ISR = slices.Clone(last)
			next.ISREpochs, next.ISRDirs = current(last, live)
		} else {
			if p.Leader == NoLeader && len(p.ISR) == len(last) {
				return p, false // already offline; wait for the last ISR member
			}
			next.Leader = NoLeader
			next.ISR = slices.Clone(last)
			next.ISREpochs, next.ISRDirs = nonZero(p.ISREpochs, last), nonEmpty(p.ISRDirs, last)
		}
	}
	if next.Leader == p.Leader && slices.Equal(next.ISR, p.ISR) && maps.Equal(next.ISREpochs, p.ISREpochs) &&
		maps.Equal(next.ISRDirs, p.ISRDirs) {
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

// current is the live epochs and directories of ids.
func current(ids []int32, live Live) (map[int32]int64, map[int32]string) {
	epochs, dirs := map[int32]int64{}, map[int32]string{}
	for _, id := range ids {
		if m, ok := live(id); ok {
			if m.Epoch != 0 {
				epochs[id] = m.Epoch
			}
			if m.Dir != "" {
				dirs[id] = m.Dir
			}
		}
	}
	return epochs, dirs
}

// nonEmpty is the entries of dirs for ids (nil-safe, empties dropped).
func nonEmpty(dirs map[int32]string, ids []int32) map[int32]string {
	out := map[int32]string{}
	for _, id := range ids {
		if d := dirs[id]; d != "" {
			out[id] = d
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
	epochs, dirs := map[int32]int64{}, map[int32]string{}
	for _, id := range prop.ISR {
		if seen[id] || !slices.Contains(p.Replicas, id) {
			return p, &Rejection{RejectInvalid, fmt.Sprintf("ISR %v is not a set of the replicas %v", prop.ISR, p.Replicas)}
		}
		seen[id] = true
		member, alive := live(id)
		proposed, in := prop.Epochs[id], slices.Contains(p.ISR, id)
		if !in {
			if !alive {
				return p, &Rejection{RejectInvalid, fmt.Sprintf("broker %d is not alive and cannot join the ISR", id)}
			}
			if proposed != 0 && member.Epoch != 0 && proposed != member.Epoch {
				return p, &Rejection{RejectStaleBrokerEpoch, fmt.Sprintf("broker %d fetched under broker epoch %d but now runs under %d",
					id, proposed, member.Epoch)}
			}
		}
		switch {
		case in && p.ISREpochs[id] != 0:
			epochs[id] = p.ISREpochs[id]
		case proposed != 0:
			epochs[id] = proposed
		case alive && member.Epoch != 0:
			epochs[id] = member.Epoch
		}
		switch {
		case in && p.ISRDirs[id] != "":
			dirs[id] = p.ISRDirs[id]
		case alive && member.Dir != "":
			dirs[id] = member.Dir
		}
	}
	next := p.Clone()
	next.ISR = slices.Clone(prop.ISR)
	slices.Sort(next.ISR)
	next.ISREpochs, next.ISRDirs = epochs, dirs
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
