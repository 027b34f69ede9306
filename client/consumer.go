package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// ConsumePartitions assigns partitions to a Consumer with their start offsets.
func ConsumePartitions(parts map[string]map[int32]Offset) ConsumerOpt {
	return consumerOpt(func(c *config) { c.partitions = parts })
}

// FetchMaxBytes caps one fetch response per partition. Default 4 MiB.
func FetchMaxBytes(n int32) FetchOpt { return fetchOpt(func(c *config) { c.fetchMaxBytes = n }) }

// FetchMaxWait is how long the broker may hold a fetch waiting for data. Default 500 ms.
func FetchMaxWait(d time.Duration) FetchOpt { return fetchOpt(func(c *config) { c.fetchMaxWait = d }) }

// ConsumeResetOffset is where a partition restarts when its position falls
// out of the log (retention; an offset given with AtOffset that is out of
// range from the start is an error instead), and where a GroupConsumer or
// a push subscriber starts a partition the group has no committed offset
// for. Default AtStart. NoResetOffset reports the error instead.
func ConsumeResetOffset(o Offset) ResetOpt { return resetOpt(func(c *config) { c.resetOffset = o }) }

// NoResetOffset makes an out-of-range offset an error in Fetches.Errors
// (ErrOffsetOutOfRange). For a GroupConsumer, a partition without a
// committed offset is not consumed and ErrNoCommittedOffset is reported
// instead; Subscribe refuses it with ErrInvalidConfig.
func NoResetOffset() Offset { return Offset{at: noReset} }

// noReset is NoResetOffset's marker.
const noReset = -100

// FetchError is a partition's error seen while fetching.
type FetchError struct {
	Topic     string
	Partition int32
	Err       error
}

// Fetches is what one poll returns.
type Fetches struct {
	Records []*Record
	Errors  []FetchError
}

// Consumer reads explicitly assigned partitions. It is safe for concurrent
// use, though one goroutine polling is the usual shape.
type Consumer struct {
	cfg  config
	node *node
	meta *metadata
	pid  *actor.PID

	mu sync.Mutex
	// buffered holds fetched records by partition; polls take from each
	// partition in turn (ring is the partitions with records, next first),
	// so one partition's backlog does not hold back the others.
	buffered map[topicPartition][]*Record
	ring     []topicPartition
	count    int
	errs     []FetchError
	bytes    int64
	notify   chan struct{}
	// started, when set, hears where a partition without a given offset
	// starts (the reset offset, resolved): a group member commits it.
	started  func(tp topicPartition, offset int64)
	closed   bool
	closedCh chan struct{}
}

// NewConsumer starts consuming the partitions given with ConsumePartitions.
func NewConsumer(broker string, opts ...ConsumerOpt) (*Consumer, error) {
	return newConsumer(broker, configOf(opts))
}

func newConsumer(broker string, cfg config) (*Consumer, error) {
	n, err := acquireNode(&cfg)
	if err != nil {
		return nil, err
	}
	c := &Consumer{cfg: cfg, node: n, meta: newMetadata(n.system, broker, cfg.requestTimeout, cfg.metadataMaxAge),
		buffered: map[topicPartition][]*Record{}, notify: make(chan struct{}, 1), closedCh: make(chan struct{})}
	c.pid = n.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return newFetcher(c) }))
	if len(cfg.partitions) > 0 {
		c.AddPartitions(cfg.partitions)
	}
	return c, nil
}

// AddPartitions starts consuming more partitions (or restarts given ones
// at new offsets). An offset given (AtOffset) outside a partition's log is
// reported in Fetches.Errors as ErrOffsetOutOfRange and the partition is
// not consumed: the reset policy is for a position that falls out of the
// log later (retention), not for an offset the caller chose.
func (c *Consumer) AddPartitions(parts map[string]map[int32]Offset) {
	c.node.system.Root.Send(c.pid, assignPartitions{parts: parts, given: true})
}

// startPartitions is AddPartitions for offsets the client chose itself (a
// group's commits): out of the log, they reset.
func (c *Consumer) startPartitions(parts map[string]map[int32]Offset) {
	c.node.system.Root.Send(c.pid, assignPartitions{parts: parts})
}

// RemovePartitions stops consuming partitions; records already buffered stay.
func (c *Consumer) RemovePartitions(parts map[string][]int32) {
	c.node.system.Root.Send(c.pid, unassignPartitions{parts: parts})
}

// PollFetches waits until records or errors are available (or ctx ends) and
// returns everything buffered.
func (c *Consumer) PollFetches(ctx context.Context) Fetches { return c.PollRecords(ctx, 0) }

// PollRecords is PollFetches returning at most max records (0: no limit).
func (c *Consumer) PollRecords(ctx context.Context, max int) Fetches {
	for {
		c.mu.Lock()
		if c.count > 0 || len(c.errs) > 0 || c.closed {
			f := c.takeLocked(max)
			c.mu.Unlock()
			c.node.system.Root.Send(c.pid, resumeFetching{})
			return f
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-ctx.Done():
			return Fetches{Errors: []FetchError{{Partition: -1, Err: ctx.Err()}}}
		}
	}
}

// takeLocked takes up to limit records (0: all), a share from each
// buffered partition in turn, each partition's in offset order.
func (c *Consumer) takeLocked(limit int) Fetches {
	n := c.count
	if limit > 0 && limit < n {
		n = limit
	}
	f := Fetches{Records: make([]*Record, 0, n), Errors: c.errs}
	c.errs = nil
	for len(f.Records) < n {
		tp := c.ring[0]
		q := c.buffered[tp]
		share := min(len(q), max(1, (n-len(f.Records))/len(c.ring)))
		f.Records = append(f.Records, q[:share]...)
		c.ring = c.ring[1:]
		if share == len(q) {
			delete(c.buffered, tp)
		} else {
			c.buffered[tp] = q[share:]
			c.ring = append(c.ring, tp)
		}
	}
	c.count -= n
	for _, r := range f.Records {
		c.bytes -= int64(len(r.Key) + len(r.Value))
	}
	if c.closed && len(f.Records) == 0 && len(f.Errors) == 0 {
		f.Errors = []FetchError{{Partition: -1, Err: ErrClosed}}
	}
	return f
}

// push hands fetched records and errors to pollers; it reports whether the
// buffer is over its limit (the fetcher then pauses).
func (c *Consumer) push(recs []*Record, errs []FetchError) bool {
	c.mu.Lock()
	for _, r := range recs {
		tp := topicPartition{r.Topic, r.Partition}
		q, ok := c.buffered[tp]
		if !ok {
			c.ring = append(c.ring, tp)
		}
		c.buffered[tp] = append(q, r)
	}
	c.count += len(recs)
	c.errs = append(c.errs, errs...)
	for _, r := range recs {
		c.bytes += int64(len(r.Key) + len(r.Value))
	}
	full := c.bytes >= c.cfg.maxPollBuffer
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return full
}

func (c *Consumer) bufferFull() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes >= c.cfg.maxPollBuffer
}

// Close stops fetching. A blocked PollFetches returns ErrClosed.
func (c *Consumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	_ = c.node.system.Root.StopFuture(c.pid).Wait()
	c.node.release()
	return nil
}

// ---- fetcher actor ------------------------------------------------------------

type (
	assignPartitions struct {
		parts map[string]map[int32]Offset
		// given: the offsets are the caller's (AddPartitions).
		given bool
	}
	unassignPartitions struct{ parts map[string][]int32 }
	resumeFetching     struct{}
	// fetchRetry wakes a cursor after a backoff; metaErr is why the
	// metadata refresh before it failed, if one ran and failed.
	fetchRetry struct {
		tp      topicPartition
		metaErr error
	}
)

// partitionCursor is the fetcher's state for one assigned partition.
type partitionCursor struct {
	tp     topicPartition
	want   Offset // where to start when offset is unresolved
	offset int64  // next offset to fetch; -1 while unresolved
	// given: offset is the caller's and nothing was fetched from it yet;
	// out of the log it is an error, not a reset.
	given    bool
	inflight bool
	addr     string // of the request in flight
	// gen tells answers for a cursor that was since replaced apart.
	gen     uint64
	backoff time.Duration
	paused  bool
	// refreshes counts metadata lookups that found no leader in a row;
	// reported says the poller was told; metaErr is why the last lookup
	// failed, when it reached no broker.
	refreshes int
	reported  bool
	metaErr   error
}

// fetcher is the consumer's actor: one fetch in flight per partition.
type fetcher struct {
	c       *Consumer
	cursors map[topicPartition]*partitionCursor
	nextGen uint64
	// unreachable are the brokers whose last answer was none: the
	// consumer retries them in silence otherwise, which to a user looks
	// like a topic with nothing new.
	unreachable map[string]bool
	lost        *eventstream.Subscription
}

func newFetcher(c *Consumer) *fetcher {
	return &fetcher{c: c, cursors: map[topicPartition]*partitionCursor{}, unreachable: map[string]bool{}}
}

// noteAnswer logs a broker becoming unreachable, and reachable again, once
// each.
func (f *fetcher) noteAnswer(addr string, err error) {
	down := err != nil && (isNotListening(err) || errors.Is(err, ErrBrokerNotAvailable) || errors.Is(err, ErrRequestTimedOut))
	switch {
	case down && !f.unreachable[addr]:
		f.unreachable[addr] = true
		f.c.cfg.logger.Warn("broker unreachable; fetching from it again until it answers", "broker", addr, "error", err)
	case err == nil && f.unreachable[addr]:
		delete(f.unreachable, addr)
		f.c.cfg.logger.Warn("broker answers again; fetching", "broker", addr)
	}
}

func (f *fetcher) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case assignPartitions:
		for topic, parts := range msg.parts {
			for p, off := range parts {
				f.nextGen++
				tp := topicPartition{topic, p}
				cur := &partitionCursor{tp: tp, want: off, offset: -1, gen: f.nextGen}
				if off.at >= 0 {
					cur.offset, cur.given = off.at, msg.given
				}
				f.cursors[tp] = cur
				f.step(ctx, cur)
			}
		}
	case unassignPartitions:
		for topic, parts := range msg.parts {
			for _, p := range parts {
				delete(f.cursors, topicPartition{topic, p})
			}
		}
	case *actor.Started:
		f.lost = watchLostBrokers(ctx)
	case *actor.Stopping:
		ctx.ActorSystem().EventStream.Unsubscribe(f.lost)
	case brokerLost:
		err := &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE, Message: fmt.Sprintf("lost the connection to the broker at %s", msg.addr)}
		for _, cur := range f.cursors {
			if cur.inflight && cur.addr == msg.addr {
				cur.inflight = false
				cur.gen++ // its answer, should one come, is stale
				f.noteAnswer(msg.addr, err)
				f.retryLater(ctx, cur, err)
			}
		}
	case resumeFetching:
		for _, cur := range f.cursors {
			if cur.paused {
				cur.paused = false
				f.step(ctx, cur)
			}
		}
	case fetchRetry:
		if cur := f.cursors[msg.tp]; cur != nil {
			cur.metaErr = msg.metaErr
			f.step(ctx, cur)
		}
	}
}

// step issues the next request for cur: a ListOffsets while its offset is
// unresolved, a Fetch otherwise.
func (f *fetcher) step(ctx actor.Context, cur *partitionCursor) {
	if cur.inflight || cur.paused {
		return
	}
	if f.c.bufferFull() {
		cur.paused = true
		return
	}
	addr, epoch, err := f.c.meta.leader(cur.tp.topic, cur.tp.partition)
	if err != nil {
		// Tell the poller once that the partition is unknown or leaderless
		// after three lookups have answered (or failed to reach any broker);
		// keep retrying, as the topic may yet be created or elect a leader.
		if cur.refreshes > 2 && !cur.reported {
			cur.reported = true
			if cur.metaErr != nil {
				err = cur.metaErr
			}
			f.c.push(nil, []FetchError{{cur.tp.topic, cur.tp.partition, err}})
		}
		cur.refreshes++
		f.retryLater(ctx, cur, err)
		return
	}
	cur.refreshes = 0
	cur.inflight, cur.addr = true, addr
	gen := cur.gen
	cfg := &f.c.cfg
	if cur.offset < 0 {
		req := &messages.ListOffsetsRequest{Topic: cur.tp.topic, Partition: cur.tp.partition,
			Timestamp: cur.want.listOffsetsTimestamp(), CurrentLeaderEpoch: -1}
		reply.Ask(ctx, brokerPID(ctx.ActorSystem(), addr), req, cfg.requestTimeout, func(res any, err error) { f.onListOffsets(ctx, cur, gen, addr, res, err) })
		return
	}
	req := &messages.FetchRequest{Topic: cur.tp.topic, Partition: cur.tp.partition, Offset: cur.offset,
		MaxBytes: cfg.fetchMaxBytes, MinBytes: cfg.fetchMinBytes, MaxWaitMs: int32(cfg.fetchMaxWait.Milliseconds()),
		CurrentLeaderEpoch: epoch}
	reply.Ask(ctx, brokerPID(ctx.ActorSystem(), addr), req, cfg.fetchMaxWait+cfg.requestTimeout, func(res any, err error) { f.onFetch(ctx, cur, gen, addr, res, err) })
}

// current reports whether cur is still the assigned cursor of generation gen.
func (f *fetcher) current(cur *partitionCursor, gen uint64) bool {
	return f.cursors[cur.tp] == cur && cur.gen == gen
}

func (f *fetcher) retryLater(ctx actor.Context, cur *partitionCursor, err error) {
	cur.backoff = min(max(cur.backoff*2, 50*time.Millisecond), time.Second)
	self, root, tp, backoff := ctx.Self(), ctx.ActorSystem().Root, cur.tp, cur.backoff
	if needsMetadata(err) {
		// The retry waits for the refresh, so a slow broker among the
		// addresses does not make the partition look unknown.
		meta := f.c.meta
		go func() {
			time.Sleep(backoff)
			root.Send(self, fetchRetry{tp, meta.refreshSoon(tp.topic)})
		}()
		return
	}
	time.AfterFunc(backoff, func() { root.Send(self, fetchRetry{tp: tp}) })
}

func (f *fetcher) onListOffsets(ctx actor.Context, cur *partitionCursor, gen uint64, addr string, res any, err error) {
	cur.inflight = false
	if !f.current(cur, gen) {
		return
	}
	msg, err := decodeResult(addr, res, err)
	f.noteAnswer(addr, err)
	if err == nil {
		resp, ok := msg.(*messages.ListOffsetsResponse)
		switch {
		case !ok:
			err = fmt.Errorf("unexpected answer %T", msg)
		case resp.Error != messages.ErrorCode_NONE:
			err = &messages.Error{Code: resp.Error, Message: resp.ErrorMessage}
		case resp.Offset < 0 && cur.want.at == -3:
			// No record at or after the timestamp: start at the end.
			cur.want = AtEnd()
			f.step(ctx, cur)
			return
		default:
			cur.offset = resp.Offset
			cur.backoff = 0
			if f.c.started != nil {
				f.c.started(cur.tp, cur.offset)
			}
			f.step(ctx, cur)
			return
		}
	}
	if !retriable(err) {
		f.c.push(nil, []FetchError{{cur.tp.topic, cur.tp.partition, err}})
	}
	f.retryLater(ctx, cur, err)
}

func (f *fetcher) onFetch(ctx actor.Context, cur *partitionCursor, gen uint64, addr string, res any, err error) {
	cur.inflight = false
	if !f.current(cur, gen) {
		return
	}
	msg, err := decodeResult(addr, res, err)
	f.noteAnswer(addr, err)
	var resp *messages.FetchResponse
	if err == nil {
		var ok bool
		if resp, ok = msg.(*messages.FetchResponse); !ok {
			err = fmt.Errorf("unexpected answer %T", msg)
		} else if resp.Topic != cur.tp.topic || resp.Partition != cur.tp.partition {
			err = fmt.Errorf("%s answered a fetch of %s-%d for %s-%d", addr, cur.tp.topic, cur.tp.partition, resp.Topic, resp.Partition)
		} else if resp.Error != messages.ErrorCode_NONE {
			err = &messages.Error{Code: resp.Error, Message: resp.ErrorMessage}
		}
	}
	switch {
	case err == nil:
		recs, next, derr := decodeBatches(cur.tp, resp.Batches, cur.offset)
		cur.offset, cur.given = next, false
		cur.backoff = 0
		cur.reported = false
		var errs []FetchError
		if derr != nil {
			errs = append(errs, FetchError{cur.tp.topic, cur.tp.partition, derr})
		}
		if len(recs) > 0 || len(errs) > 0 {
			f.c.push(recs, errs)
		}
		if derr != nil {
			f.retryLater(ctx, cur, derr)
			return
		}
		f.step(ctx, cur)
	case errors.Is(err, ErrOffsetOutOfRange) && cur.given:
		delete(f.cursors, cur.tp)
		f.c.push(nil, []FetchError{{cur.tp.topic, cur.tp.partition, fmt.Errorf("offset %d given: %w", cur.offset, err)}})
	case errors.Is(err, ErrOffsetOutOfRange) && f.c.cfg.resetOffset.at != noReset:
		f.c.cfg.logger.Info("offset out of range; resetting", "topic", cur.tp.topic, "partition", cur.tp.partition,
			"offset", cur.offset, "reset", f.c.cfg.resetOffset)
		cur.want, cur.offset = f.c.cfg.resetOffset, -1
		if f.c.cfg.resetOffset.at >= 0 {
			cur.offset = f.c.cfg.resetOffset.at
		}
		f.step(ctx, cur)
	default:
		if !retriable(err) {
			f.c.push(nil, []FetchError{{cur.tp.topic, cur.tp.partition, err}})
		}
		f.retryLater(ctx, cur, err)
	}
}

// decodeBatches turns fetched batches into records at or after from, and
// returns the next offset to fetch. Batch CRCs are checked, as Kafka's
// consumer does.
func decodeBatches(tp topicPartition, batches [][]byte, from int64) ([]*Record, int64, error) {
	next := from
	var out []*Record
	for _, b := range batches {
		h, err := record.CheckCRC(b)
		if err != nil {
			return out, next, &messages.Error{Code: messages.ErrorCode_CORRUPT_RECORD,
				Message: fmt.Sprintf("%s-%d at offset %d: %v", tp.topic, tp.partition, next, err)}
		}
		slab := make([]Record, 0, h.RecordCount)
		it := record.Records(b)
		for {
			r, ok, err := it.Next()
			if err != nil {
				return out, next, &messages.Error{Code: messages.ErrorCode_CORRUPT_RECORD, Message: err.Error()}
			}
			if !ok {
				break
			}
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off < next {
				continue
			}
			slab = append(slab, Record{Topic: tp.topic, Partition: tp.partition, Key: r.Key, Value: r.Value,
				Timestamp: time.UnixMilli(h.BaseTimestamp + r.TimestampDelta), Offset: off, LeaderEpoch: h.LeaderEpoch})
			rec := &slab[len(slab)-1]
			if r.HeaderCount() > 0 {
				rec.Headers, _ = r.Headers(nil)
			}
			out = append(out, rec)
		}
		next = max(next, h.NextOffset())
	}
	return out, next, nil
}
