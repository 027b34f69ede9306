package producerstate

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// WindowSize is the number of most recent batches remembered per producer id
// (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN). It is also the largest
// max.in.flight.requests.per.connection an idempotent producer may use: every
// batch a producer can still be retrying is one of its last WindowSize.
const WindowSize = 5

const (
	// DefaultProducerIDExpiration is how long a producer id may stay idle
	// before its state is dropped: 7 days, Kafka's
	// transactional.id.expiration.ms, which also expired producer ids until
	// Kafka 3.4 gave them producer.id.expiration.ms (1 day) of their own.
	DefaultProducerIDExpiration = 7 * 24 * time.Hour

	// DefaultMaxProducerIDs is the number of producer ids one partition
	// replica tracks at most. With the window of WindowSize batches an entry
	// takes about 250 bytes, so a full partition holds about 2.5 MB.
	DefaultMaxProducerIDs = 10_000
)

// Config bounds the state of one partition replica.
type Config struct {
	// ProducerIDExpiration: a producer id idle for this long or longer (no
	// batch appended or replayed) is forgotten. 0 means
	// DefaultProducerIDExpiration; a negative value means never.
	ProducerIDExpiration time.Duration
	// MaxProducerIDs caps the producer ids tracked; past it the least
	// recently updated one is forgotten. 0 means DefaultMaxProducerIDs; a
	// negative value means no cap.
	MaxProducerIDs int
}

func (c Config) expiration() time.Duration {
	if c.ProducerIDExpiration == 0 {
		return DefaultProducerIDExpiration
	}
	return c.ProducerIDExpiration
}

func (c Config) maxProducerIDs() int {
	if c.MaxProducerIDs == 0 {
		return DefaultMaxProducerIDs
	}
	return c.MaxProducerIDs
}

// Batch is what the state needs from a RecordBatch v2 header.
type Batch struct {
	// ProducerID is the batch's producer id; negative (record.NoProducer
	// has -1) marks a batch written without idempotence.
	ProducerID int64
	// Epoch is the producer epoch.
	Epoch int16
	// BaseSequence is the sequence number of the batch's first record.
	BaseSequence int32
	// RecordCount is the number of records, at least 1.
	RecordCount int32
	// MaxTimestamp is the largest record timestamp (milliseconds), kept so
	// that a duplicate can be answered with it.
	MaxTimestamp int64
}

// Idempotent reports whether the batch carries a producer id.
func (b Batch) Idempotent() bool { return b.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, wrapping
// from math.MaxInt32 to 0 as Kafka does.
func (b Batch) LastSequence() int32 { return addSequence(b.BaseSequence, b.RecordCount-1) }

// valid reports whether an idempotent batch's fields can be checked at all.
func (b Batch) valid() bool { return b.Epoch >= 0 && b.BaseSequence >= 0 && b.RecordCount > 0 }

// addSequence returns seq+n (n >= 0) in the sequence space [0, MaxInt32],
// wrapping to 0 after math.MaxInt32 (Kafka's DefaultRecordBatch.incrementSequence).
func addSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// Outcome is the verdict on a batch a leader is about to append.
type Outcome uint8

const (
	// Append: write the batch. It is the next batch of its producer and
	// epoch, the first batch of a new epoch (sequence 0), the first batch of
	// a producer id with no state (any sequence, see Check), or not
	// idempotent.
	Append Outcome = iota
	// Duplicate: the batch is a retry of one of the producer's last
	// WindowSize batches. Write nothing; answer success with the original
	// batch's offsets (Decision.FirstOffset), exactly as that batch would
	// have been answered (acks=all waits until the high watermark passes
	// Decision.LastOffset).
	Duplicate
	// OutOfOrderSequence: the sequence leaves a gap after the producer's
	// last one, overlaps a remembered batch without matching it exactly,
	// falls before the window, or a new epoch does not start at 0. Answer
	// OUT_OF_ORDER_SEQUENCE; write nothing.
	OutOfOrderSequence
	// ProducerFenced: the batch's epoch is older than the producer's current
	// one: a newer instance of this producer exists. Answer PRODUCER_FENCED
	// (Kafka 2.7+ answers INVALID_PRODUCER_EPOCH on the produce path).
	ProducerFenced
	// InvalidBatch: an idempotent batch with a negative epoch or sequence or
	// no records. Answer CORRUPT_RECORD (Kafka: INVALID_RECORD).
	InvalidBatch
)

var outcomeNames = [...]string{
	Append:             "append",
	Duplicate:          "duplicate",
	OutOfOrderSequence: "out of order sequence",
	ProducerFenced:     "producer fenced",
	InvalidBatch:       "invalid batch",
}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Decision is Check's answer for one batch.
type Decision struct {
	Outcome Outcome
	// FirstOffset and LastOffset are the offsets of the original batch when
	// Outcome is Duplicate, and -1 otherwise.
	FirstOffset, LastOffset int64
	// MaxTimestamp is the original batch's max timestamp when Outcome is
	// Duplicate, and -1 otherwise.
	MaxTimestamp int64
	// NewProducer is set on an Append for an idempotent batch whose producer
	// id has no state here (never seen, expired, evicted by the cap, reset
	// or truncated away): its sequence was accepted unchecked.
	NewProducer bool
	// Epoch is the producer's current epoch before this batch, and
	// LastSequence the last sequence appended in that epoch; both -1 when
	// the producer has no state or the batch is not idempotent.
	Epoch        int16
	LastSequence int32
	// Reason explains a rejection (OutOfOrderSequence, ProducerFenced,
	// InvalidBatch) for the response's error message; empty otherwise.
	Reason string
}

// BatchMeta is what is remembered of one appended batch.
type BatchMeta struct {
	FirstSequence, LastSequence int32
	FirstOffset, LastOffset     int64
	MaxTimestamp                int64
}

// ProducerSnapshot is a copy of one producer id's state.
type ProducerSnapshot struct {
	ProducerID int64
	Epoch      int16
	// LastUpdate is the latest time passed to Appended or Replay for it.
	LastUpdate time.Time
	// Batches are its last (up to WindowSize) batches of Epoch, oldest
	// first; never empty.
	Batches []BatchMeta
}

// producer is the state of one producer id. Invariant: n >= 1 while it is in
// a State, and batches[:n] all belong to epoch, in offset order.
type producer struct {
	id         int64
	epoch      int16
	n          int
	batches    [WindowSize]BatchMeta
	lastUpdate time.Time
	// prev and next link the State's recency list (prev: more recent).
	prev, next *producer
}

func (p *producer) last() BatchMeta { return p.batches[p.n-1] }

// add records an appended batch: a batch of another epoch starts a new
// window, a sixth batch pushes out the oldest.
func (p *producer) add(b Batch, firstOffset int64, t time.Time) {
	if b.Epoch != p.epoch || p.n == 0 {
		p.epoch = b.Epoch
		p.n = 0
	}
	if p.n == WindowSize {
		copy(p.batches[:], p.batches[1:])
		p.n--
	}
	p.batches[p.n] = BatchMeta{
		FirstSequence: b.BaseSequence,
		LastSequence:  b.LastSequence(),
		FirstOffset:   firstOffset,
		LastOffset:    firstOffset + int64(b.RecordCount) - 1,
		MaxTimestamp:  b.MaxTimestamp,
	}
	p.n++
	if t.After(p.lastUpdate) {
		p.lastUpdate = t
	}
}

// decide is the sequence check of one batch against a producer's state
// (nil: none). It reads nothing else and changes nothing.
func decide(p *producer, b Batch) Decision {
	d := Decision{Outcome: Append, FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, Epoch: -1, LastSequence: -1}
	if !b.Idempotent() {
		return d
	}
	if !b.valid() {
		d.Outcome = InvalidBatch
		d.Reason = fmt.Sprintf("producer %d: epoch %d, base sequence %d, %d records: an idempotent batch needs a non-negative epoch and sequence and at least one record",
			b.ProducerID, b.Epoch, b.BaseSequence, b.RecordCount)
		return d
	}
	if p == nil {
		d.NewProducer = true
		return d
	}
	last := p.last()
	d.Epoch, d.LastSequence = p.epoch, last.LastSequence
	switch {
	case b.Epoch < p.epoch:
		d.Outcome = ProducerFenced
		d.Reason = fmt.Sprintf("producer %d: epoch %d is older than the current epoch %d", b.ProducerID, b.Epoch, p.epoch)
	case b.Epoch > p.epoch:
		if b.BaseSequence != 0 {
			d.Outcome = OutOfOrderSequence
			d.Reason = fmt.Sprintf("producer %d: new epoch %d (current %d) must start at sequence 0, got %d",
				b.ProducerID, b.Epoch, p.epoch, b.BaseSequence)
		}
	default:
		first, lastSeq := b.BaseSequence, b.LastSequence()
		for _, m := range p.batches[:p.n] {
			if m.FirstSequence == first && m.LastSequence == lastSeq {
				d.Outcome = Duplicate
				d.FirstOffset, d.LastOffset, d.MaxTimestamp = m.FirstOffset, m.LastOffset, m.MaxTimestamp
				return d
			}
		}
		if want := addSequence(last.LastSequence, 1); first != want {
			d.Outcome = OutOfOrderSequence
			d.Reason = fmt.Sprintf("producer %d epoch %d: expected sequence %d after %d, got batch %d..%d",
				b.ProducerID, b.Epoch, want, last.LastSequence, first, lastSeq)
		}
	}
	return d
}

// State is the idempotent-producer state of one partition replica: per
// producer id its epoch and last WindowSize batches. It is not safe for
// concurrent use. The zero value is a State with the default Config.
//
// On the leader, Check every batch before appending it and call Appended for
// each batch written, in offset order. Every replica also feeds Replay with
// each batch of its log in order: on open, and as a follower for each batch
// it copies (or all at once before becoming leader). After the log is
// truncated, call TruncateTo, or Reset and Replay the log again for exact
// state (see TruncateTo).
//
// Every method that takes a time treats a producer id idle for
// ProducerIDExpiration or longer at that time as already expired, so
// decisions do not depend on when Expire runs.
type State struct {
	cfg       Config
	producers map[int64]*producer
	// head is the most recently updated producer, tail the least.
	head, tail *producer
	// gen counts changes, so that a Pending can tell it has gone stale.
	gen uint64
}

// NewState returns an empty State.
func NewState(cfg Config) *State { return &State{cfg: cfg} }

// Len is the number of producer ids tracked, expired ones not yet removed by
// Expire included.
func (s *State) Len() int { return len(s.producers) }

// Check decides what to do with batch b of a produce request at now; it
// changes nothing. Idempotent batches are checked in this order:
//
//   - no state for the producer id (or expired at now): Append with
//     NewProducer set, whatever the epoch and sequence;
//   - epoch older than the current one: ProducerFenced;
//   - epoch newer than the current one: Append if the sequence is 0, else
//     OutOfOrderSequence;
//   - same epoch, (first, last) sequence equal to one of the last
//     WindowSize batches: Duplicate with that batch's offsets;
//   - same epoch, first sequence = last sequence + 1 (math.MaxInt32 is
//     followed by 0): Append; anything else: OutOfOrderSequence.
//
// Non-idempotent batches (ProducerID < 0) are always Append.
func (s *State) Check(b Batch, now time.Time) Decision {
	return decide(s.lookup(b.ProducerID, now), b)
}

// Appended records batch b, written at firstOffset (its records take
// firstOffset .. firstOffset+RecordCount-1), at now. Call it for each batch
// in the order of the log. It trusts its input (the log is the truth): a
// batch of another epoch than the current one starts a new window, lower
// epochs included. Non-idempotent and invalid batches are ignored. Recording
// a producer id past MaxProducerIDs forgets the least recently updated one.
func (s *State) Appended(b Batch, firstOffset int64, now time.Time) {
	s.record(b, firstOffset, now)
}

// Replay records a batch read back from the log at firstOffset, as Appended
// does; ts is what to count as the producer's last update. Logs do not keep
// the time a batch was appended, so a rebuild usually passes the batch's
// MaxTimestamp (Kafka does the same). Replaying a log with the times its
// batches were appended gives a State that answers every Check as the State
// that appended them does; after Expire at the same time both are equal (the
// live one may have dropped expired ids earlier).
func (s *State) Replay(b Batch, firstOffset int64, ts time.Time) {
	s.record(b, firstOffset, ts)
}

// Expire forgets every producer id idle for ProducerIDExpiration or longer at
// now and returns how many it forgot. Call it from the partition's tick.
func (s *State) Expire(now time.Time) int {
	n := 0
	for p := s.tail; p != nil; {
		prev := p.prev
		if s.expired(p, now) {
			s.remove(p)
			n++
		}
		p = prev
	}
	if n > 0 {
		s.gen++
	}
	return n
}

// Reset forgets everything. After the log is truncated, Reset and then Replay
// every batch of the remaining log gives the exact state of that log.
func (s *State) Reset() {
	s.producers = nil
	s.head, s.tail = nil, nil
	s.gen++
}

// TruncateTo follows a truncation of the log to offset (everything at or above
// it removed): it forgets every remembered batch whose last offset is at or
// above offset, and producer ids left with none. It is cheap and
// conservative rather than exact: what remains is true of the log, but a
// producer's window may now hold fewer than the WindowSize batches a Replay
// of the log would find, so a retry of such an older batch is answered
// OutOfOrderSequence where a rebuilt state would answer Duplicate, and a
// producer id left with nothing is treated as new. Reset and Replay for
// exact state.
func (s *State) TruncateTo(offset int64) {
	for p := s.tail; p != nil; {
		prev := p.prev
		for p.n > 0 && p.batches[p.n-1].LastOffset >= offset {
			p.n--
		}
		if p.n == 0 {
			s.remove(p)
		}
		p = prev
	}
	s.gen++
}

// Snapshot copies the state, sorted by producer id. Expired producer ids not
// yet removed by Expire are included.
func (s *State) Snapshot() []ProducerSnapshot {
	out := make([]ProducerSnapshot, 0, len(s.producers))
	for _, p := range s.producers {
		out = append(out, ProducerSnapshot{
			ProducerID: p.id,
			Epoch:      p.epoch,
			LastUpdate: p.lastUpdate,
			Batches:    slices.Clone(p.batches[:p.n]),
		})
	}
	slices.SortFunc(out, func(a, b ProducerSnapshot) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}

func (s *State) expired(p *producer, now time.Time) bool {
	exp := s.cfg.expiration()
	return exp > 0 && now.Sub(p.lastUpdate) >= exp
}

// lookup returns the producer's state, nil when there is none or it has
// expired at now.
func (s *State) lookup(id int64, now time.Time) *producer {
	p := s.producers[id]
	if p == nil || s.expired(p, now) {
		return nil
	}
	return p
}

func (s *State) record(b Batch, firstOffset int64, t time.Time) {
	if !b.Idempotent() || !b.valid() {
		return
	}
	if s.producers == nil {
		s.producers = map[int64]*producer{}
	}
	p := s.producers[b.ProducerID]
	if p != nil && s.expired(p, t) {
		s.remove(p)
		p = nil
	}
	if p == nil {
		p = &producer{id: b.ProducerID, epoch: b.Epoch}
		s.producers[p.id] = p
	} else {
		s.unlink(p)
	}
	s.pushFront(p)
	p.add(b, firstOffset, t)
	s.gen++
	if limit := s.cfg.maxProducerIDs(); limit > 0 {
		for len(s.producers) > limit {
			s.remove(s.tail)
		}
	}
}

func (s *State) remove(p *producer) {
	s.unlink(p)
	delete(s.producers, p.id)
}

func (s *State) pushFront(p *producer) {
	p.prev, p.next = nil, s.head
	if s.head != nil {
		s.head.prev = p
	} else {
		s.tail = p
	}
	s.head = p
}

func (s *State) unlink(p *producer) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.tail = p.prev
	}
	p.prev, p.next = nil, nil
}
