package election

import (
	"fmt"
	"slices"
)

// Partition reassignment as Kafka does it (KIP-455): a partition moving
// to a target replica set first grows to both sets (the target, in its
// order, then the replicas leaving), so the new replicas follow the leader
// and catch up while the old ones keep serving. Once every target replica
// is in the ISR the move completes in one write: the replica set becomes
// the target, the leaving replicas drop out of the ISR and, if the leader
// is one of them, the first in-sync target replica leads. Until the whole
// target is in sync no replica leaves the ISR because of the move. As in
// Kafka, a cancelled move keeps the original replicas in the order of the
// merged set (the preferred leader may change).

// Reassigning reports whether p is moving to another replica set.
func (p Partition) Reassigning() bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }

// Target is the replica set p is moving to (its replicas when it is not
// moving).
func (p Partition) Target() []int32 {
	return filter(p.Replicas, func(id int32) bool { return !slices.Contains(p.Removing, id) })
}

// Original is the replica set p had before its move began.
func (p Partition) Original() []int32 {
	return filter(p.Replicas, func(id int32) bool { return !slices.Contains(p.Adding, id) })
}

// ValidateTarget checks a target replica set: at least one broker, none
// twice, each alive (the controller knows no other brokers to place on).
func ValidateTarget(target []int32, live Live) error {
	if len(target) == 0 {
		return fmt.Errorf("a replica set needs at least one broker")
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return fmt.Errorf("replica set %v names broker %d twice", target, id)
		}
		if _, alive := live(id); !alive {
			return fmt.Errorf("broker %d is not a live broker", id)
		}
	}
	return nil
}

// Reassign starts moving p to target (replacing a move in progress: the
// new one starts from p's original replicas). A target with the original
// replicas ends the move in progress, as a cancel does. A move that adds
// no replica, or whose added replicas are in sync already, completes at
// once. changed is false when p needs no write; err says why the move
// cannot start.
func Reassign(p Partition, target []int32, live Live) (next Partition, changed bool, err error) {
	original := p.Original()
	if sameSet(target, original) && p.Reassigning() {
		return Cancel(p, live)
	}
	if slices.Equal(target, p.Replicas) {
		return p, false, nil
	}
	next = p.Clone()
	next.Adding = filter(target, func(id int32) bool { return !slices.Contains(original, id) })
	next.Removing = filter(original, func(id int32) bool { return !slices.Contains(target, id) })
	next.Replicas = append(slices.Clone(target), next.Removing...)
	// Replicas a replaced move was adding leave the ISR if the new target
	// does not keep them.
	if err := next.keepOnly(next.Replicas, live); err != nil {
		return p, false, err
	}
	next.PartitionEpoch++
	if done, ok := Complete(next, live); ok {
		done.PartitionEpoch = next.PartitionEpoch
		return done, true, nil
	}
	if !next.Reassigning() {
		next.Adding, next.Removing = nil, nil // the same replicas in another order
	}
	return next, true, nil
}

// Complete finishes p's move once every target replica is in the ISR:
// the replica set becomes the target, the leaving replicas leave the ISR,
// and a leader that leaves hands over to the first in-sync target replica
// (a new leader epoch). ok is false while the move must wait.
func Complete(p Partition, live Live) (next Partition, ok bool) {
	if !p.Reassigning() {
		return p, false
	}
	target := p.Target()
	for _, id := range target {
		if !slices.Contains(p.ISR, id) {
			return p, false
		}
	}
	next = p.Clone()
	next.Replicas, next.Adding, next.Removing = target, nil, nil
	if err := next.keepOnly(target, live); err != nil {
		return p, false
	}
	next.PartitionEpoch++
	return next, true
}

// Cancel ends p's move in progress: back to the original replicas, the
// replicas it was adding out of the ISR, and a leader among them handing
// over to the first in-sync original replica. err when no original
// replica is in sync: the move must complete instead.
func Cancel(p Partition, live Live) (next Partition, changed bool, err error) {
	if !p.Reassigning() {
		return p, false, nil
	}
	next = p.Clone()
	next.Replicas, next.Adding, next.Removing = p.Original(), nil, nil
	if err := next.keepOnly(next.Replicas, live); err != nil {
		return p, false, fmt.Errorf("cannot cancel the move: %w", err)
	}
	next.PartitionEpoch++
	return next, true, nil
}

// keepOnly takes every broker not in keep out of p's ISR; when the leader
// goes, the first replica of keep in the ISR and alive leads, under a new
// leader epoch. An offline partition (no leader) stays offline with the
// ISR it keeps.
func (p *Partition) keepOnly(keep []int32, live Live) error {
	isr := filter(p.ISR, func(id int32) bool { return slices.Contains(keep, id) })
	if len(isr) == 0 {
		return fmt.Errorf("none of replicas %v is in the ISR %v", keep, p.ISR)
	}
	if p.Leader != NoLeader && !slices.Contains(isr, p.Leader) {
		leader, ok := first(keep, func(id int32) bool {
			return slices.Contains(isr, id) && p.inSync(id, live) && p.sameDir(id, live)
		})
		if !ok {
			return fmt.Errorf("no replica of %v in the ISR %v is alive to lead", keep, isr)
		}
		p.Leader = leader
		p.LeaderEpoch++
	}
	p.ISR = isr
	p.ISREpochs, p.ISRDirs = nonZero(p.ISREpochs, isr), nonEmpty(p.ISRDirs, isr)
	return nil
}

// sameSet reports whether a and b hold the same brokers.
func sameSet(a, b []int32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id int32) bool { return !slices.Contains(b, id) })
}
