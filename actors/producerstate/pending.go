package producerstate

import "time"

// Pending is a copy-on-write view of a State for one group commit: several
// produce requests checked one after the other and then written with one
// append. Each batch is checked against the State as it will be once the
// batches before it in the group are written, so the second batch of a
// producer follows the first, and a retry of a batch queued earlier in the
// same group is a Duplicate with the offsets that batch was given.
//
//	pend := st.Begin()
//	for each queued batch b {
//		switch d := pend.Check(b, now); d.Outcome {
//		case producerstate.Append:
//			pend.Appended(b, leo, now) // leo: the offset b will be written at
//			leo += int64(b.RecordCount)
//		case producerstate.Duplicate: // answer with d.FirstOffset once written
//		default: // answer the error
//		}
//	}
//	if log.Append(...) == nil { pend.Commit() } // on failure drop pend
//
// A Duplicate of a batch from the same group is not durable until the write
// succeeds: answer it only then. The State must not change between Begin and
// Commit (no Appended, Replay, Expire, Reset or TruncateTo, no other Commit):
// every Pending method panics if it did. A Pending that is not committed
// changes nothing. Producer ids the cap would evict are evicted at Commit,
// not while the group is checked.
type Pending struct {
	s    *State
	gen  uint64
	over map[int64]*producer
	ops  []pendingOp
	done bool
}

type pendingOp struct {
	b     Batch
	first int64
	t     time.Time
}

// Begin starts a group commit on s.
func (s *State) Begin() *Pending { return &Pending{s: s, gen: s.gen} }

func (p *Pending) usable() {
	if p.done {
		panic("producerstate: Pending used after Commit")
	}
	if p.s.gen != p.gen {
		panic("producerstate: State changed while a Pending was open")
	}
}

// Check is State.Check for batch b as if every batch passed to p.Appended so
// far had been appended to the State. It changes nothing.
func (p *Pending) Check(b Batch, now time.Time) Decision {
	p.usable()
	return decide(p.lookup(b.ProducerID, now), b)
}

// Appended records in the view that b will be written at firstOffset at now,
// as State.Appended would; batches go in offset order.
func (p *Pending) Appended(b Batch, firstOffset int64, now time.Time) {
	p.usable()
	if !b.Idempotent() || !b.valid() {
		return
	}
	q := p.over[b.ProducerID]
	switch {
	case q == nil:
		q = &producer{id: b.ProducerID, epoch: b.Epoch}
		if base := p.s.lookup(b.ProducerID, now); base != nil {
			*q = *base
			q.prev, q.next = nil, nil
		}
		if p.over == nil {
			p.over = map[int64]*producer{}
		}
		p.over[b.ProducerID] = q
	case p.s.expired(q, now):
		*q = producer{id: b.ProducerID, epoch: b.Epoch}
	}
	q.add(b, firstOffset, now)
	p.ops = append(p.ops, pendingOp{b: b, first: firstOffset, t: now})
}

// Len is the number of idempotent batches recorded with Appended (the ones
// Commit will apply).
func (p *Pending) Len() int { return len(p.ops) }

// Commit applies every batch recorded with Appended to the State, in order,
// as State.Appended. Call it once the group's write has succeeded; the
// Pending cannot be used afterwards.
func (p *Pending) Commit() {
	p.usable()
	p.done = true
	for _, op := range p.ops {
		p.s.record(op.b, op.first, op.t)
	}
	p.ops, p.over = nil, nil
}

func (p *Pending) lookup(id int64, now time.Time) *producer {
	if q := p.over[id]; q != nil {
		if p.s.expired(q, now) {
			return nil
		}
		return q
	}
	return p.s.lookup(id, now)
}
