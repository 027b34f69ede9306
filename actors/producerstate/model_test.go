package producerstate

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// ---- the model --------------------------------------------------------------

// The model is the specification written plainly: it remembers every batch a
// producer id ever appended (within one lifetime: until it expires or is
// evicted), with int64 arithmetic for sequences, and derives each decision
// from that whole history.

type mBatch struct {
	epoch       int16
	first, last int32
	firstOff    int64
	lastOff     int64
	ts          int64
}

type mProducer struct {
	epoch      int16
	hist       []mBatch // every batch of this lifetime, all epochs, in order
	lastUpdate time.Time
	touched    int // order of the last update, for the LRU cap
}

type model struct {
	exp      time.Duration // <= 0: none
	cap      int           // <= 0: none
	prods    map[int64]*mProducer
	touchSeq int
	ever     map[int64]bool // producer ids ever added
}

func newModel(exp time.Duration, cap int) *model {
	return &model{exp: exp, cap: cap, prods: map[int64]*mProducer{}, ever: map[int64]bool{}}
}

func mLast(base, count int32) int32 {
	return int32((int64(base) + int64(count) - 1) % (math.MaxInt32 + 1))
}

func mNext(seq int32) int32 { return int32((int64(seq) + 1) % (math.MaxInt32 + 1)) }

func (m *model) live(id int64, now time.Time) *mProducer {
	p := m.prods[id]
	if p == nil || m.exp > 0 && now.Sub(p.lastUpdate) >= m.exp {
		return nil
	}
	return p
}

// currentRun is the producer's batches of its current epoch.
func (p *mProducer) currentRun() []mBatch {
	i := len(p.hist)
	for i > 0 && p.hist[i-1].epoch == p.epoch {
		i--
	}
	return p.hist[i:]
}

func (m *model) expect(b Batch, now time.Time) (Outcome, mBatch) {
	if b.ProducerID < 0 {
		return Append, mBatch{}
	}
	if b.Epoch < 0 || b.BaseSequence < 0 || b.RecordCount <= 0 {
		return InvalidBatch, mBatch{}
	}
	p := m.live(b.ProducerID, now)
	if p == nil {
		return Append, mBatch{}
	}
	if b.Epoch < p.epoch {
		return ProducerFenced, mBatch{}
	}
	if b.Epoch > p.epoch {
		if b.BaseSequence == 0 {
			return Append, mBatch{}
		}
		return OutOfOrderSequence, mBatch{}
	}
	run := p.currentRun()
	last := mLast(b.BaseSequence, b.RecordCount)
	for i, h := range run {
		if h.first == b.BaseSequence && h.last == last {
			if i >= len(run)-WindowSize {
				return Duplicate, h
			}
			return OutOfOrderSequence, mBatch{} // a retry from before the window
		}
	}
	if b.BaseSequence == mNext(run[len(run)-1].last) {
		return Append, mBatch{}
	}
	return OutOfOrderSequence, mBatch{}
}

func (m *model) add(b Batch, off int64, t time.Time) {
	if b.ProducerID < 0 {
		return
	}
	p := m.live(b.ProducerID, t)
	if p == nil {
		p = &mProducer{epoch: b.Epoch}
		m.prods[b.ProducerID] = p
	}
	p.epoch = b.Epoch
	p.hist = append(p.hist, mBatch{epoch: b.Epoch, first: b.BaseSequence, last: mLast(b.BaseSequence, b.RecordCount),
		firstOff: off, lastOff: off + int64(b.RecordCount) - 1, ts: b.MaxTimestamp})
	if t.After(p.lastUpdate) {
		p.lastUpdate = t
	}
	m.touchSeq++
	p.touched = m.touchSeq
	m.ever[b.ProducerID] = true
	for m.cap > 0 && len(m.prods) > m.cap {
		var oldest int64
		first := true
		for id, q := range m.prods {
			if first || q.touched < m.prods[oldest].touched {
				oldest, first = id, false
			}
		}
		delete(m.prods, oldest)
	}
}

func (m *model) expire(now time.Time) int {
	n := 0
	for id, p := range m.prods {
		if m.exp > 0 && now.Sub(p.lastUpdate) >= m.exp {
			delete(m.prods, id)
			n++
		}
	}
	return n
}

// snapshot is what the State's Snapshot must be.
func (m *model) snapshot() []ProducerSnapshot {
	var out []ProducerSnapshot
	for id, p := range m.prods {
		run := p.currentRun()
		run = run[max(0, len(run)-WindowSize):]
		s := ProducerSnapshot{ProducerID: id, Epoch: p.epoch, LastUpdate: p.lastUpdate}
		for _, h := range run {
			s.Batches = append(s.Batches, BatchMeta{FirstSequence: h.first, LastSequence: h.last,
				FirstOffset: h.firstOff, LastOffset: h.lastOff, MaxTimestamp: h.ts})
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ProducerSnapshot) int { return int(a.ProducerID - b.ProducerID) })
	return out
}

func (m *model) clone() *model {
	c := *m
	c.prods = map[int64]*mProducer{}
	c.ever = maps.Clone(m.ever)
	for id, p := range m.prods {
		q := *p
		q.hist = slices.Clone(p.hist)
		c.prods[id] = &q
	}
	return &c
}

// ---- simulated producers ----------------------------------------------------

type kind int

const (
	kNew kind = iota
	kRetryRecent
	kRetryOld
	kGap
	kOverlap
	kBump0
	kBumpNonZero
	kFenced
	kNonIdempotent
	kInvalid
	kRestart
	numKinds
)

var kindNames = [numKinds]string{"new", "retry-recent", "retry-old", "gap", "overlap", "bump-0", "bump-nonzero",
	"fenced", "non-idempotent", "invalid", "restart"}

// kindWeights: in-order batches and recent retries dominate, as in life.
var kindWeights = [numKinds]int{40, 12, 5, 5, 5, 3, 2, 3, 3, 1, 1}

// client is what a producer knows: what it sent and got appended.
type client struct {
	pid     int64
	epoch   int16
	started bool
	next    int32
	sent    []Batch // appended batches of the current epoch, in order
}

func pickKind(rng *rand.Rand) kind {
	total := 0
	for _, w := range kindWeights {
		total += w
	}
	n := rng.IntN(total)
	for k, w := range kindWeights {
		if n < w {
			return kind(k)
		}
		n -= w
	}
	panic("unreachable")
}

func randomCount(rng *rand.Rand) int32 {
	if rng.IntN(20) == 0 {
		return 100 + rng.Int32N(1000)
	}
	return 1 + rng.Int32N(4)
}

// randomStart is a new producer's first sequence: Kafka producers start at
// 0, but a producer whose state was lost continues anywhere, and starting
// next to math.MaxInt32 exercises the wrap-around.
func randomStart(rng *rand.Rand) int32 {
	switch rng.IntN(3) {
	case 0:
		return 0
	case 1:
		return math.MaxInt32 - rng.Int32N(12)
	}
	return rng.Int32N(1000)
}

func (c *client) generate(rng *rand.Rand, k kind, nextPID *int64) (Batch, kind) {
	if k == kRestart {
		*nextPID++
		*c = client{pid: *nextPID, epoch: int16(rng.IntN(3))}
		k = kNew
	}
	if !c.started && k != kNonIdempotent && k != kInvalid {
		k = kNew
	}
	b := Batch{ProducerID: c.pid, Epoch: c.epoch, RecordCount: randomCount(rng), MaxTimestamp: rng.Int64N(1 << 40)}
	switch k {
	case kNew:
		if c.started {
			b.BaseSequence = c.next
		} else {
			b.BaseSequence = randomStart(rng)
		}
	case kRetryRecent:
		return c.sent[len(c.sent)-1-rng.IntN(min(len(c.sent), WindowSize))], k
	case kRetryOld:
		if len(c.sent) <= WindowSize {
			return c.sent[0], kRetryRecent
		}
		return c.sent[rng.IntN(len(c.sent)-WindowSize)], k
	case kGap:
		b.BaseSequence = addSequence(c.next, 1+rng.Int32N(5))
	case kOverlap:
		r := c.sent[len(c.sent)-1-rng.IntN(min(len(c.sent), WindowSize))]
		switch rng.IntN(3) {
		case 0: // same first sequence, another length
			b.BaseSequence = r.BaseSequence
			b.RecordCount = r.RecordCount + 1 + rng.Int32N(3)
		case 1: // starts inside r
			b.BaseSequence = addSequence(r.BaseSequence, rng.Int32N(r.RecordCount))
		default: // the sequence before the next one
			b.BaseSequence = r.LastSequence()
		}
	case kBump0:
		b.Epoch = c.epoch + 1 + int16(rng.IntN(2))
		b.BaseSequence = 0
	case kBumpNonZero:
		b.Epoch = c.epoch + 1
		b.BaseSequence = 1 + rng.Int32N(10)
		if rng.IntN(2) == 0 {
			b.BaseSequence = c.next
		}
	case kFenced:
		if c.epoch == 0 {
			return c.generate(rng, kNew, nextPID)
		}
		b.Epoch = int16(rng.IntN(int(c.epoch)))
		b.BaseSequence = c.next
	case kNonIdempotent:
		b = Batch{ProducerID: -1, Epoch: -1, BaseSequence: -1, RecordCount: b.RecordCount, MaxTimestamp: b.MaxTimestamp}
	case kInvalid:
		b.BaseSequence = -1 - rng.Int32N(3)
	}
	return b, k
}

func (c *client) appended(b Batch) {
	if b.ProducerID != c.pid || !b.Idempotent() {
		return
	}
	if b.Epoch != c.epoch || !c.started {
		c.epoch, c.sent = b.Epoch, nil
	}
	c.started = true
	c.sent = append(c.sent, b)
	c.next = addSequence(b.LastSequence(), 1)
}

func (c client) clone() client {
	c.sent = slices.Clone(c.sent)
	return c
}

// ---- the run ----------------------------------------------------------------

type logEntry struct {
	b   Batch
	off int64
	t   time.Time
}

type simConfig struct {
	cfg      Config
	clients  int
	steps    int
	pending  bool          // check and append in group commits
	maxStep  time.Duration // largest clock step
	expireAt int           // call Expire every this many steps (0: never)
}

type sim struct {
	t       *testing.T
	seed    uint64
	sc      simConfig
	rng     *rand.Rand
	s       *State
	m       *model
	clients []client
	nextPID int64
	off     int64
	now     time.Time
	log     []logEntry
	st      *simStats
}

// simStats counts what the runs exercised.
type simStats struct {
	// seen counts generated kinds by outcome.
	seen [numKinds][InvalidBatch + 1]int
	// forgotten counts batches of producer ids that had state once and lost
	// it (expiry, the cap), expired counts ids Expire dropped.
	forgotten, expired int
	// wrapped counts appended batches whose sequences wrap past
	// math.MaxInt32; chained counts batches appended in a group after
	// another batch of the same producer in that group, groupDups retries
	// of a batch appended earlier in the same group.
	wrapped, chained, groupDups int
}

func (w *sim) failf(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d: %s", w.seed, fmt.Sprintf(format, args...))
}

// verify compares a decision with the model's.
func (w *sim) verify(d Decision, b Batch, k kind, now time.Time, who string) {
	w.t.Helper()
	want, orig := w.m.expect(b, now)
	if d.Outcome != want {
		w.failf("%s: %s batch %+v: got %v (%s), model says %v", who, kindNames[k], b, d.Outcome, d.Reason, want)
	}
	if want == Duplicate && (d.FirstOffset != orig.firstOff || d.LastOffset != orig.lastOff || d.MaxTimestamp != orig.ts) {
		w.failf("%s: duplicate %+v answered with %d..%d ts %d, original %d..%d ts %d", who, b,
			d.FirstOffset, d.LastOffset, d.MaxTimestamp, orig.firstOff, orig.lastOff, orig.ts)
	}
	if want != Duplicate && (d.FirstOffset != -1 || d.LastOffset != -1) {
		w.failf("%s: %v decision with offsets %+v", who, d.Outcome, d)
	}
	if want == Append && b.Idempotent() && d.NewProducer != (w.m.live(b.ProducerID, now) == nil) {
		w.failf("%s: NewProducer %v for %+v", who, d.NewProducer, b)
	}
	w.st.seen[k][want]++
	if want == Append && b.Idempotent() && b.LastSequence() < b.BaseSequence {
		w.st.wrapped++
	}
	if d.NewProducer && w.m.ever[b.ProducerID] {
		w.st.forgotten++
	}
}

func (w *sim) compareSnapshot(where string) {
	w.t.Helper()
	if got, want := w.s.Snapshot(), w.m.snapshot(); !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
		w.failf("%s: snapshot\n%+v\nmodel\n%+v", where, got, want)
	}
}

func (w *sim) step(clientIdx int, k kind) (Batch, kind) {
	c := &w.clients[clientIdx]
	return c.generate(w.rng, k, &w.nextPID)
}

func (w *sim) appendOne(b Batch) {
	w.s.Appended(b, w.off, w.now)
	w.m.add(b, w.off, w.now)
	w.log = append(w.log, logEntry{b, w.off, w.now})
	w.off += int64(b.RecordCount)
}

func runSim(t *testing.T, seed uint64, sc simConfig, st *simStats) {
	w := &sim{t: t, seed: seed, sc: sc, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), s: NewState(sc.cfg),
		m: newModel(sc.cfg.expiration(), sc.cfg.maxProducerIDs()), now: t0, st: st}
	for i := range sc.clients {
		w.nextPID = int64(i)
		w.clients = append(w.clients, client{pid: int64(i), epoch: int16(w.rng.IntN(3))})
	}
	w.off = w.rng.Int64N(1000)
	for step := 0; step < sc.steps; {
		w.now = w.now.Add(time.Duration(w.rng.Int64N(int64(sc.maxStep))))
		if sc.pending && w.rng.IntN(3) == 0 {
			step += w.group()
		} else {
			i := w.rng.IntN(len(w.clients))
			b, k := w.step(i, pickKind(w.rng))
			if w.rng.IntN(50) == 0 {
				before := w.s.Snapshot()
				w.s.Check(b, w.now)
				if !reflect.DeepEqual(before, w.s.Snapshot()) {
					w.failf("Check changed the state")
				}
			}
			d := w.s.Check(b, w.now)
			w.verify(d, b, k, w.now, "state")
			if d.Outcome == Append {
				w.appendOne(b)
				w.clients[i].appended(b)
			}
			step++
		}
		if sc.expireAt > 0 && step%sc.expireAt == 0 {
			if got, want := w.s.Expire(w.now), w.m.expire(w.now); got != want {
				w.failf("Expire dropped %d, model %d", got, want)
			} else {
				w.st.expired += got
			}
		}
		if step%64 == 0 {
			w.compareSnapshot(fmt.Sprintf("step %d", step))
		}
	}
	w.compareSnapshot("end")
	w.checkRebuild()
}

// group validates 1..6 batches as one group commit through a Pending, then
// commits it, or (one time in eight) drops it as if the write had failed.
func (w *sim) group() int {
	n := 1 + w.rng.IntN(6)
	fail := w.rng.IntN(8) == 0
	var savedModel *model
	var savedClients []client
	savedOff, savedLog := w.off, len(w.log)
	if fail {
		savedModel = w.m.clone()
		for _, c := range w.clients {
			savedClients = append(savedClients, c.clone())
		}
	}
	before := w.s.Snapshot()
	pend := w.s.Begin()
	var appended []Batch
	// Groups favour one producer, so that its batches follow each other.
	hot := w.rng.IntN(len(w.clients))
	inGroup := map[int64]bool{}
	for range n {
		i := hot
		if w.rng.IntN(3) == 0 {
			i = w.rng.IntN(len(w.clients))
		}
		b, k := w.step(i, pickKind(w.rng))
		d := pend.Check(b, w.now)
		w.verify(d, b, k, w.now, "pending")
		if d.Outcome == Duplicate && d.FirstOffset >= savedOff {
			w.st.groupDups++
		}
		if d.Outcome == Append && b.Idempotent() && inGroup[b.ProducerID] {
			w.st.chained++
		}
		if d.Outcome == Append {
			inGroup[b.ProducerID] = true
			pend.Appended(b, w.off, w.now)
			w.m.add(b, w.off, w.now)
			w.log = append(w.log, logEntry{b, w.off, w.now})
			w.off += int64(b.RecordCount)
			w.clients[i].appended(b)
			appended = append(appended, b)
		}
	}
	if !reflect.DeepEqual(before, w.s.Snapshot()) {
		w.failf("the pending view changed the State before Commit")
	}
	if pend.Len() != len(appended)-countNonIdempotent(appended) {
		w.failf("pending holds %d batches, %d appended", pend.Len(), len(appended))
	}
	if fail {
		w.m, w.clients, w.off, w.log = savedModel, savedClients, savedOff, w.log[:savedLog]
	} else {
		pend.Commit()
	}
	w.compareSnapshot("after group")
	return n
}

func countNonIdempotent(bs []Batch) int {
	n := 0
	for _, b := range bs {
		if !b.Idempotent() {
			n++
		}
	}
	return n
}

// checkRebuild replays the log into a fresh State: it must answer every
// probe as the live one and the model do, and once both have run Expire it
// must equal the live one (the live one may have dropped expired producer ids
// earlier; a rebuild drops them when Expire runs).
func (w *sim) checkRebuild() {
	r := NewState(w.sc.cfg)
	for _, e := range w.log {
		r.Replay(e.b, e.off, e.t)
	}
	for i := range w.clients {
		for range 30 {
			c := w.clients[i].clone()
			k := pickKind(w.rng)
			if k == kRestart {
				k = kNew
			}
			b, k := c.generate(w.rng, k, new(int64))
			live, rebuilt := w.s.Check(b, w.now), r.Check(b, w.now)
			if live != rebuilt {
				w.failf("probe %+v: live %+v, rebuilt %+v", b, live, rebuilt)
			}
			w.verify(live, b, k, w.now, "probe")
		}
	}
	if w.sc.expireAt == 0 {
		if got, want := r.Snapshot(), w.s.Snapshot(); !reflect.DeepEqual(got, want) {
			w.failf("rebuilt snapshot\n%+v\nlive\n%+v", got, want)
		}
	}
	r.Expire(w.now)
	w.s.Expire(w.now)
	w.m.expire(w.now)
	if got, want := r.Snapshot(), w.s.Snapshot(); !reflect.DeepEqual(got, want) {
		w.failf("rebuilt snapshot after Expire\n%+v\nlive\n%+v", got, want)
	}
	w.compareSnapshot("rebuild")
}

// The sequence window as a state machine against the model: many producers
// interleaved, retries within and beyond the window, gaps, overlaps, epoch
// bumps with and without sequence 0, fencing, wrap-around at math.MaxInt32,
// group commits (some dropped), then a rebuild by Replay.
func TestRandomizedAgainstModel(t *testing.T) {
	var st simStats
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		runSim(t, seed, simConfig{clients: 1 + int(seed%5), steps: 600, pending: true, maxStep: time.Second}, &st)
	}
	seen := st.seen
	// Every kind of batch was generated and met the verdict it exists for.
	mustSee := map[kind]Outcome{
		kNew: Append, kRetryRecent: Duplicate, kRetryOld: OutOfOrderSequence, kGap: OutOfOrderSequence,
		kOverlap: OutOfOrderSequence, kBump0: Append, kBumpNonZero: OutOfOrderSequence, kFenced: ProducerFenced,
		kNonIdempotent: Append, kInvalid: InvalidBatch,
	}
	for k, o := range mustSee {
		if seen[k][o] == 0 {
			t.Errorf("no %s batch answered %v: %v", kindNames[k], o, seen[k])
		}
	}
	if st.wrapped == 0 || st.chained == 0 || st.groupDups == 0 {
		t.Errorf("wrap-around or group commits not exercised: %+v", st)
	}
	t.Logf("kinds × outcomes: %v; wrapped %d, chained in a group %d, duplicates within a group %d",
		seen, st.wrapped, st.chained, st.groupDups)
}

// The same with expiry and a small cap on producer ids: producers forgotten
// for idleness or by the LRU cap start over unchecked, in the State and in
// the model alike. Batches go one at a time (a Pending defers evictions to
// Commit, which the model does not).
func TestRandomizedWithExpiryAndCapAgainstModel(t *testing.T) {
	var st simStats
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		runSim(t, seed, simConfig{
			cfg:      Config{ProducerIDExpiration: time.Minute, MaxProducerIDs: 1 + int(seed%4)},
			clients:  2 + int(seed%5),
			steps:    600,
			maxStep:  15 * time.Second,
			expireAt: 7,
		}, &st)
	}
	if st.forgotten == 0 || st.expired == 0 || st.seen[kRetryRecent][Duplicate] == 0 {
		t.Fatalf("expiry and the cap were not exercised: %+v", st)
	}
	t.Logf("forgotten producers' batches %d, expired ids %d", st.forgotten, st.expired)
}
