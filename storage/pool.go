package storage

import (
	"container/list"
	"math"
	"runtime/debug"
	"sync"
	"time"
)

// Pool keeps the memory that the open WAL logs of a broker hold within a
// budget. tidwall/wal holds the segment being written in memory, and a
// segment read from the middle of a log too; a log the pool closes holds
// only its index (about 40 bytes per batch) and reopens on its next use.
//
// The pool closes the least recently used logs once the estimate of what
// the open ones hold passes the budget, and any log unused for IdleAfter.
// It also sizes new segments: a log opened while the pool holds n logs
// writes segments of at most Budget/(3n) bytes (never under
// MinSegmentBytes), so that even when every log is written at once their
// segments in memory (two each) stay near the budget.
//
// Closing runs on the pool's own goroutine, under the log's lock, never
// under the pool's: a log's owner can keep calling it meanwhile.
type Pool struct {
	budget    int64
	idleAfter time.Duration
	maxOpen   int // most WALs open at once (each holds a file descriptor)

	mu   sync.Mutex
	lru  *list.List // of *WALLog, most recently used at the front
	logs int        // logs registered, open or not
	open int64      // estimated bytes held by open logs
	// idleFreed is what logs closed for idleness held, since the last
	// returnIdleMemory.
	idleFreed int64
	wake      chan struct{}
	stop      chan struct{}
	stopped   chan struct{}
	stats     PoolStats
}

// PoolStats are a pool's counters.
type PoolStats struct {
	Logs, Open  int   // registered logs; of those, open
	Bytes       int64 // estimate of what the open logs hold
	Budget      int64
	Closed      int64 // closed for the budget or idleness
	Reopened    int64
	SegmentSize int // what a log opened now would write
}

// MinSegmentBytes is the smallest segment a pool asks for: smaller ones
// make wal fsync a finished segment (which it does inline) too often.
const MinSegmentBytes = 256 << 10

// DefaultIdleAfter is how long a log stays open unused.
const DefaultIdleAfter = 30 * time.Second

// NewPool starts a pool with the given budget in bytes (> 0), idle time
// (<= 0: DefaultIdleAfter) and most logs open at once (<= 0: no limit).
// Stop it with Close.
func NewPool(budget int64, idleAfter time.Duration, maxOpen int) *Pool {
	if idleAfter <= 0 {
		idleAfter = DefaultIdleAfter
	}
	if maxOpen <= 0 {
		maxOpen = math.MaxInt
	}
	p := &Pool{budget: budget, idleAfter: idleAfter, maxOpen: maxOpen, lru: list.New(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go p.run()
	return p
}

// Close stops the pool's goroutine; logs stay as they are.
func (p *Pool) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.stopped
}

// Stats returns the pool's state.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Logs, s.Open, s.Bytes, s.Budget, s.SegmentSize = p.logs, p.lru.Len(), p.open, p.budget, p.segmentSizeLocked()
	return s
}

// Budget is the pool's budget in bytes.
func (p *Pool) Budget() int64 { return p.budget }

// segmentSizeLocked: an open log holds the segment being written and the
// one before it (wal caches the segment it has just finished), each with
// up to a quarter more for the slack of a growing buffer: budget/3n per
// segment lets every log be written at once.
func (p *Pool) segmentSizeLocked() int {
	n := int64(max(p.logs, 1))
	return int(max(p.budget/(3*n), MinSegmentBytes))
}

// segmentSize is the largest segment a log opening now may write.
func (p *Pool) segmentSize() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.segmentSizeLocked()
}

// register counts a log; unregister forgets it (on Close).
func (p *Pool) register() {
	p.mu.Lock()
	p.logs++
	p.mu.Unlock()
}

func (p *Pool) unregister(w *WALLog) {
	p.mu.Lock()
	p.logs--
	p.removeLocked(w)
	p.mu.Unlock()
}

// used moves w to the front with its new estimate; called by w
// under its own lock.
func (p *Pool) used(w *WALLog, bytes int64, now time.Time) {
	p.mu.Lock()
	if w.poolElem == nil {
		w.poolElem = p.lru.PushFront(w)
	} else {
		p.lru.MoveToFront(w.poolElem)
	}
	p.open += bytes - w.poolBytes
	w.poolBytes, w.poolUsed = bytes, now
	over := p.overLocked()
	p.mu.Unlock()
	if over {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// over reports whether the open logs hold more than the budget, or are
// more than may be open.
func (p *Pool) over() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.overLocked()
}

func (p *Pool) overLocked() bool { return p.open > p.budget || p.lru.Len() > p.maxOpen }

// reopened counts a WAL opened again after the pool closed it.
func (p *Pool) reopened() {
	p.mu.Lock()
	p.stats.Reopened++
	p.mu.Unlock()
}

// closed is called by w, under its own lock, when its WAL was closed.
func (p *Pool) closed(w *WALLog) {
	p.mu.Lock()
	p.removeLocked(w)
	p.mu.Unlock()
}

func (p *Pool) removeLocked(w *WALLog) {
	if w.poolElem != nil {
		p.lru.Remove(w.poolElem)
		w.poolElem = nil
		p.open -= w.poolBytes
		w.poolBytes = 0
	}
}

// run closes logs when the pool is over budget and once a second for idleness.
func (p *Pool) run() {
	defer close(p.stopped)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-tick.C:
		}
		p.shed(time.Now())
		p.returnIdleMemory()
	}
}

// shed closes idle logs, then least recently used ones until the open logs
// are back under 90% of the budget (so that one more write does not wake
// the pool again at once) and no more than maxOpen.
func (p *Pool) shed(now time.Time) {
	for {
		p.mu.Lock()
		e := p.lru.Back()
		if e == nil {
			p.mu.Unlock()
			return
		}
		w := e.Value.(*WALLog)
		idle := now.Sub(w.poolUsed) >= p.idleAfter
		if !idle && p.open <= p.budget/10*9 && p.lru.Len() <= p.maxOpen {
			p.mu.Unlock()
			return
		}
		// Take it out first: a log busy in its owner's hands is released
		// after it, and re-enters at the front if it is used again.
		bytes := w.poolBytes
		p.removeLocked(w)
		p.mu.Unlock()
		if w.hibernate() {
			p.mu.Lock()
			p.stats.Closed++
			if idle {
				p.idleFreed += bytes
			}
			p.mu.Unlock()
		}
	}
}

// returnIdleMemory gives what idle logs released back to the system once
// it adds up: a broker that goes quiet allocates nothing, so without this
// the garbage collector would not run for minutes and the freed segments
// would stay in its heap.
func (p *Pool) returnIdleMemory() {
	p.mu.Lock()
	due := p.idleFreed >= returnAfter
	if due {
		p.idleFreed = 0
	}
	p.mu.Unlock()
	if due {
		debug.FreeOSMemory()
	}
}

// returnAfter is how much idle logs must have released before
// returnIdleMemory runs a collection.
const returnAfter = 32 << 20
