package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/transport"
)

// AckLevel is how many replicas must have a batch before the broker answers.
type AckLevel int32

const (
	// NoAck: the broker does not answer; records count as sent when sent.
	NoAck AckLevel = 0
	// LeaderAck: the leader answers after its own durable append.
	LeaderAck AckLevel = 1
	// AllAcks: the leader answers once every in-sync replica has the batch.
	AllAcks AckLevel = -1
)

// Acks sets the acknowledgement level. Default AllAcks.
func Acks(a AckLevel) Opt { return func(c *config) { c.acks = int32(a) } }

// Linger is how long a partition's batch waits for more records before it
// is sent. Default 5 ms.
func Linger(d time.Duration) Opt { return func(c *config) { c.linger = d } }

// Compression compresses each batch's records with codec (Kafka's:
// record.Gzip, record.Snappy, record.LZ4, record.Zstd; default none).
// Brokers store batches as they arrive and consumers decompress them.
func Compression(codec record.Codec) Opt { return func(c *config) { c.compression = codec } }

// BatchBytes caps one record batch (and so the largest record). Default 1 MiB,
// the broker's default max.message.bytes.
func BatchBytes(n int) Opt { return func(c *config) { c.batchBytes = n } }

// MaxBufferedBytes bounds the records held before Produce blocks. Default 64 MiB.
func MaxBufferedBytes(n int64) Opt { return func(c *config) { c.maxBuffered = n } }

// MaxInFlight caps produce requests outstanding per partition. Default 5.
func MaxInFlight(n int) Opt { return func(c *config) { c.maxInFlight = n } }

// Retries caps how often a batch is resent after a retriable error.
// Default: unlimited within DeliveryTimeout.
func Retries(n int) Opt { return func(c *config) { c.retries = n } }

// RetryBackoff is the pause before a batch is resent. Default 100 ms.
func RetryBackoff(d time.Duration) Opt { return func(c *config) { c.retryBackoff = d } }

// DeliveryTimeout bounds the time from Produce to the final answer. Default 2 min.
func DeliveryTimeout(d time.Duration) Opt { return func(c *config) { c.deliveryTimeout = d } }

// MaxBlock bounds how long Produce waits for a topic's metadata (Kafka's
// max.block.ms): while no broker answers, or the topic's partitions have
// no leader yet. A topic the brokers say twice does not exist fails at
// once. Default 10 s.
func MaxBlock(d time.Duration) Opt { return func(c *config) { c.maxBlock = d } }

// Idempotence turns the idempotent producer on or off. It is on by default
// with AllAcks: the producer gets a producer id and numbers its batches per
// partition, so that a batch retried after a lost answer or a leader
// failover is written once, in order. It needs AllAcks and at most 5
// requests in flight per partition. A batch that fails for good does not
// block its partition: if nothing shows it was written, the partition's
// sequences restart under the producer's next epoch.
func Idempotence(on bool) Opt { return func(c *config) { c.idempotence = &on } }

// WithPartitioner sets the partitioner. Default KafkaPartitioner.
func WithPartitioner(p Partitioner) Opt { return func(c *config) { c.partitioner = p } }

// ManualPartitioner sends every record to its Record.Partition.
func ManualPartitioner() Partitioner { return manualPartitioner{} }

type manualPartitioner struct{}

func (manualPartitioner) Partition(r *Record, n int) int { return int(r.Partition) }

// Producer batches records per partition and sends them to partition
// leaders. It is safe for concurrent use.
type Producer struct {
	cfg  config
	node *node
	meta *metadata
	pid  *actor.PID

	mu     sync.Mutex
	parts  map[topicPartition]*partitionBuffer
	closed bool

	buffered    atomic.Int64 // bytes of records not yet answered
	outstanding atomic.Int64 // records not yet answered
	signalMu    sync.Mutex
	signal      chan struct{} // closed and replaced when bytes or records are released
	pool        sync.Pool
}

type topicPartition struct {
	topic     string
	partition int32
}

// Promise is called once per record with its outcome. Promises run on the
// producer's actor and must not block.
type Promise func(*Record, error)

type pendingRecord struct {
	r       *Record
	promise Promise
}

// partitionBuffer is the open batch of one partition.
type partitionBuffer struct {
	mu      sync.Mutex
	tp      topicPartition
	builder record.Builder
	recs    []pendingRecord
	started time.Time
	gen     uint64 // bumped per sealed batch, so a stale linger timer does nothing
	// lastLen is the size of the partition's previous batch: the next one
	// starts with room for as much, so that it rarely has to grow.
	lastLen int
	// reserved is what the open batch's records took from the buffer.
	reserved int64
}

// sealedBatch is a finished batch on its way to the leader.
type sealedBatch struct {
	tp       topicPartition
	data     []byte
	recs     []pendingRecord
	size     int64
	created  time.Time
	attempts int
	lastErr  error // the retriable error of the last attempt
	// seq is the batch's base sequence once first sent (idempotence), -1 before.
	seq int32
	// ordinal counts the partition's batches in send order (idempotence), -1
	// before.
	ordinal int64
	// notInLog: the last attempt was answered OUT_OF_ORDER_SEQUENCE, so the
	// leader does not have the batch (idempotence).
	notInLog bool
}

// NewProducer connects a producer to the cluster that broker belongs to;
// broker may list several addresses separated by commas.
func NewProducer(broker string, opts ...Opt) (*Producer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.acks != 0 && cfg.acks != 1 && cfg.acks != -1 {
		return nil, fmt.Errorf("acks %d: want NoAck, LeaderAck or AllAcks", cfg.acks)
	}
	if cfg.batchBytes < 1024 || cfg.batchBytes > 64<<20 {
		return nil, fmt.Errorf("batch bytes %d: want 1 KiB to 64 MiB", cfg.batchBytes)
	}
	if cfg.maxInFlight < 1 {
		return nil, fmt.Errorf("max in flight %d: want >= 1", cfg.maxInFlight)
	}
	if cfg.idempotence == nil {
		on := cfg.acks == -1 && cfg.maxInFlight <= 5
		cfg.idempotence = &on
	}
	if *cfg.idempotence && (cfg.acks != -1 || cfg.maxInFlight > 5) {
		return nil, fmt.Errorf("idempotence needs AllAcks and at most 5 requests in flight (acks %d, max in flight %d)", cfg.acks, cfg.maxInFlight)
	}
	if kp, ok := cfg.partitioner.(*kafkaPartitioner); ok {
		kp.setBatchBytes(cfg.batchBytes)
	}
	n, err := acquireNode(&cfg)
	if err != nil {
		return nil, err
	}
	p := &Producer{cfg: cfg, node: n, meta: newMetadata(n.system, broker, cfg.requestTimeout, cfg.metadataMaxAge),
		parts: map[topicPartition]*partitionBuffer{}, signal: make(chan struct{})}
	p.pool.New = func() any { return make([]byte, 0, min(cfg.batchBytes, 256<<10)) }
	p.pid = n.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return newSender(p) }))
	return p, nil
}

// Produce buffers r for its topic's partition and returns; promise (which may
// be nil) is called with the outcome. It blocks only while the buffer is full
// or the topic's metadata is unknown, and returns ctx's error then.
func (p *Producer) Produce(ctx context.Context, r *Record, promise Promise) {
	if err := p.produce(ctx, r, promise); err != nil && promise != nil {
		promise(r, err)
	}
}

// ProduceSync produces r and waits for its acknowledgement. It returns the
// partition and offset the record got.
func (p *Producer) ProduceSync(ctx context.Context, r *Record) (int32, int64, error) {
	done := make(chan error, 1)
	p.Produce(ctx, r, func(_ *Record, err error) { done <- err })
	select {
	case err := <-done:
		return r.Partition, r.Offset, err
	case <-ctx.Done():
		return r.Partition, -1, ctx.Err()
	}
}

func (p *Producer) produce(ctx context.Context, r *Record, promise Promise) error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = time.Now()
	}
	size := record.RecordSize(0, 0, r.Key, r.Value, r.Headers) + 10
	if size+record.HeaderSize > p.cfg.batchBytes {
		return &messages.Error{Code: messages.ErrorCode_RECORD_TOO_LARGE,
			Message: fmt.Sprintf("record of %d bytes exceeds the batch limit of %d bytes", size, p.cfg.batchBytes)}
	}
	n, ok := p.meta.cachedPartitionCount(r.Topic)
	if !ok {
		// Like Kafka's max.block.ms: wait for the topic's metadata while
		// brokers fail over or the topic's leaders are elected.
		mctx, cancel := context.WithTimeout(ctx, min(p.cfg.maxBlock, p.cfg.deliveryTimeout))
		var err error
		n, err = p.meta.partitionCount(mctx, r.Topic, true)
		cancel()
		if err != nil {
			return err
		}
	}
	part := p.cfg.partitioner.Partition(r, n)
	if part < 0 || part >= n {
		return &messages.Error{Code: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION,
			Message: fmt.Sprintf("partition %d of topic %q, which has %d", part, r.Topic, n)}
	}
	r.Partition = int32(part)
	if err := p.reserve(ctx, int64(size)); err != nil {
		return err
	}
	pb := p.buffer(topicPartition{r.Topic, r.Partition})
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.builder.Len()+size > p.cfg.batchBytes && len(pb.recs) > 0 {
		p.sealLocked(pb)
	}
	if len(pb.recs) == 0 {
		buf := p.pool.Get().([]byte)
		if cap(buf) < pb.lastLen {
			buf = make([]byte, 0, min(pb.lastLen+pb.lastLen/8, p.cfg.batchBytes))
		}
		pb.builder.ResetBuffer(buf, record.NoProducer)
		pb.started = time.Now()
		gen := pb.gen
		if p.cfg.linger > 0 {
			time.AfterFunc(p.cfg.linger, func() { p.sealIfCurrent(pb, gen) })
		}
	}
	pb.builder.Append(r.Timestamp.UnixMilli(), r.Key, r.Value, r.Headers)
	pb.recs = append(pb.recs, pendingRecord{r: r, promise: promise})
	pb.reserved += int64(size)
	if p.cfg.linger <= 0 || pb.builder.Len() >= p.cfg.batchBytes-64 {
		p.sealLocked(pb)
	}
	return nil
}

// reserve waits until size more bytes fit in the buffer.
func (p *Producer) reserve(ctx context.Context, size int64) error {
	for {
		p.signalMu.Lock()
		if p.buffered.Load()+size <= p.cfg.maxBuffered || p.buffered.Load() == 0 {
			p.buffered.Add(size)
			p.outstanding.Add(1)
			p.signalMu.Unlock()
			return nil
		}
		ch := p.signal
		p.signalMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release returns bytes and records to the buffer and wakes waiters.
func (p *Producer) release(size int64, records int64) {
	p.signalMu.Lock()
	p.buffered.Add(-size)
	p.outstanding.Add(-records)
	close(p.signal)
	p.signal = make(chan struct{})
	p.signalMu.Unlock()
}

func (p *Producer) buffer(tp topicPartition) *partitionBuffer {
	p.mu.Lock()
	defer p.mu.Unlock()
	pb := p.parts[tp]
	if pb == nil {
		pb = &partitionBuffer{tp: tp}
		p.parts[tp] = pb
	}
	return pb
}

func (p *Producer) sealIfCurrent(pb *partitionBuffer, gen uint64) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.gen == gen && len(pb.recs) > 0 {
		p.sealLocked(pb)
	}
}

// sealLocked finishes pb's open batch and hands it to the sender actor.
func (p *Producer) sealLocked(pb *partitionBuffer) {
	if len(pb.recs) == 0 {
		return
	}
	data := pb.builder.Finish()
	if p.cfg.compression != record.NoCompression {
		// A batch that will not compress is sent as it is.
		if c, err := record.Compress(data, p.cfg.compression); err == nil {
			p.pool.Put(data[:0])
			data = c
		}
	}
	size := pb.reserved
	pb.reserved, pb.lastLen = 0, len(data)
	b := &sealedBatch{tp: pb.tp, data: data, recs: pb.recs, size: size, created: pb.started, seq: -1, ordinal: -1}
	pb.recs = nil
	pb.gen++
	p.node.system.Root.Send(p.pid, b)
}

// Flush sends every buffered record and waits until all have an answer.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	parts := make([]*partitionBuffer, 0, len(p.parts))
	for _, pb := range p.parts {
		parts = append(parts, pb)
	}
	p.mu.Unlock()
	for _, pb := range parts {
		pb.mu.Lock()
		p.sealLocked(pb)
		pb.mu.Unlock()
	}
	for {
		p.signalMu.Lock()
		if p.outstanding.Load() == 0 {
			p.signalMu.Unlock()
			break
		}
		ch := p.signal
		p.signalMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if p.cfg.acks != 0 {
		return nil
	}
	// acks=0 records count as sent when handed to the transport, which may
	// still hold them: wait until each leader they went to has them.
	done := make(chan struct{})
	p.node.system.Root.Send(p.pid, &deliveryBarrier{ctx: ctx, done: done})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deliveryBarrier asks the sender to confirm that every acks=0 request sent
// so far has reached its leader, then close done.
type deliveryBarrier struct {
	ctx  context.Context
	done chan struct{}
}

// Close flushes (for at most the delivery timeout), then stops the producer.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	// Longer than any record may wait: each fails with its own delivery
	// timeout (and the error of its last attempt) before Close gives up.
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.deliveryTimeout+p.cfg.requestTimeout+time.Second)
	defer cancel()
	err := p.Flush(ctx)
	_ = p.node.system.Root.StopFuture(p.pid).Wait()
	p.node.release()
	return err
}

// ---- sender actor -----------------------------------------------------------

// sender is the producer's actor: it owns the queues of sealed batches,
// keeps at most MaxInFlight requests per partition, and retries. With
// idempotence it numbers batches per partition and keeps the sequences
// without gaps (see partitionQueue).
type sender struct {
	p          *Producer
	queues     map[topicPartition]*partitionQueue
	refreshing bool

	// producerID and producerEpoch are the newest the brokers gave (-1
	// until InitProducerId answered); a partition adopts them when it
	// numbers its first batch or restarts its sequences.
	producerID    int64
	producerEpoch int16
	initializing  bool
	initBackoff   time.Duration

	// unconfirmed holds the partitions sent acks=0 requests since the last
	// delivery barrier, with their leader's address.
	unconfirmed map[topicPartition]string
}

type (
	retryDue          struct{ tp topicPartition }
	metadataRefreshed struct{}
	initRetry         struct{}
)

func newSender(p *Producer) *sender {
	return &sender{p: p, queues: map[topicPartition]*partitionQueue{}, producerID: -1,
		unconfirmed: map[topicPartition]string{}}
}

func (s *sender) idempotent() bool { return *s.p.cfg.idempotence }

func (s *sender) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *sealedBatch:
		q := s.queue(msg.tp)
		q.batches = append(q.batches, msg)
		s.trySend(ctx, msg.tp)
	case retryDue:
		s.trySend(ctx, msg.tp)
	case metadataRefreshed:
		s.refreshing = false
		s.sendAll(ctx)
	case initRetry:
		s.sendAll(ctx) // the queues still waiting ask again
	case *deliveryBarrier:
		s.onDeliveryBarrier(ctx, msg)
	case *actor.Stopping:
		for _, q := range s.queues {
			for _, b := range q.batches {
				s.finish(b, -1, ErrClosed)
			}
			q.batches = nil
		}
	}
}

// onDeliveryBarrier asks the leader of every partition that got acks=0
// requests since the last barrier for the partition's end offset. The
// transport keeps the order of messages to one broker, and the broker routes
// them to the partition in order, so each answer means the requests before
// it were delivered.
func (s *sender) onDeliveryBarrier(ctx actor.Context, b *deliveryBarrier) {
	pending := len(s.unconfirmed)
	if pending == 0 {
		close(b.done)
		return
	}
	timeout := s.p.cfg.requestTimeout
	if d, ok := b.ctx.Deadline(); ok {
		timeout = max(min(time.Until(d), timeout), time.Millisecond)
	}
	for tp, addr := range s.unconfirmed {
		delete(s.unconfirmed, tp)
		req := &messages.ListOffsetsRequest{Topic: tp.topic, Partition: tp.partition, Timestamp: -1, CurrentLeaderEpoch: -1}
		fut := ctx.RequestFuture(transport.BrokerPID(addr), req, timeout)
		ctx.ReenterAfter(fut, func(any, error) {
			if pending--; pending == 0 {
				close(b.done)
			}
		})
	}
}

func (s *sender) sendAll(ctx actor.Context) {
	for tp := range s.queues {
		s.trySend(ctx, tp)
	}
}

func (s *sender) queue(tp topicPartition) *partitionQueue {
	q := s.queues[tp]
	if q == nil {
		q = newPartitionQueue()
		s.queues[tp] = q
	}
	return q
}

// requestProducerID asks a broker for a producer id or, with bump, for the
// next epoch of the current one; every queue is woken when it answers.
func (s *sender) requestProducerID(ctx actor.Context, bump bool) {
	if s.initializing {
		return
	}
	s.initializing = true
	req := &messages.InitProducerIdRequest{}
	if bump {
		req.ProducerId, req.ProducerEpoch = s.producerID, int32(s.producerEpoch)
	}
	addrs := s.p.meta.addrs()
	addr := addrs[time.Now().Nanosecond()%len(addrs)]
	fut := ctx.RequestFuture(transport.BrokerPID(addr), req, s.p.cfg.requestTimeout)
	ctx.ReenterAfter(fut, func(res any, err error) {
		s.initializing = false
		msg, err := decodeResult(addr, res, err)
		resp, ok := msg.(*messages.InitProducerIdResponse)
		if err == nil && ok && resp.Error == messages.ErrorCode_NONE {
			s.producerID, s.producerEpoch, s.initBackoff = resp.ProducerId, int16(resp.ProducerEpoch), 0
			s.sendAll(ctx)
			return
		}
		s.p.cfg.logger.Debug("init producer id failed; retrying", "bump", bump, "error", err, "answer", resp)
		s.initBackoff = min(max(2*s.initBackoff, 50*time.Millisecond), time.Second)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(s.initBackoff, func() { root.Send(self, initRetry{}) })
	})
}

// readyToSend reports whether q may send its first batch now (idempotence):
// the producer has an id and the partition's next step is a send, after its
// sequences were restarted under a newer epoch if they had a gap.
func (s *sender) readyToSend(ctx actor.Context, tp topicPartition, q *partitionQueue) bool {
	if s.producerID < 0 {
		s.requestProducerID(ctx, false)
		return false
	}
	switch q.nextStep(s.p.cfg.maxInFlight) {
	case stepWait:
		return false
	case stepRestart:
		if q.producerID == s.producerID && q.epoch == s.producerEpoch {
			s.requestProducerID(ctx, true)
			return false // until the next epoch comes
		}
		q.restart(s.producerID, s.producerEpoch)
		s.p.cfg.logger.Info("sequences restarted at 0 under a new producer epoch after a lost batch", "topic", tp.topic,
			"partition", tp.partition, "producer_id", q.producerID, "epoch", q.epoch)
		return q.nextStep(s.p.cfg.maxInFlight) == stepSend
	}
	return true
}

// trySend starts requests for tp's queued batches while in-flight room remains.
func (s *sender) trySend(ctx actor.Context, tp topicPartition) {
	q := s.queue(tp)
	cfg := &s.p.cfg
	for len(q.batches) > 0 && q.inflight < cfg.maxInFlight && !time.Now().Before(q.retryAt) {
		b := q.batches[0]
		if time.Since(b.created) > cfg.deliveryTimeout {
			q.batches = q.batches[1:]
			s.fail(q, b, deliveryTimeout(b))
			continue
		}
		if s.idempotent() && !s.readyToSend(ctx, tp, q) {
			return
		}
		addr, _, err := s.p.meta.leader(tp.topic, tp.partition)
		if err != nil {
			s.refresh(ctx, tp.topic)
			return
		}
		q.batches = q.batches[1:]
		if s.idempotent() && b.seq < 0 {
			q.number(b, s.producerID, s.producerEpoch)
		}
		b.notInLog = false
		req := &messages.ProduceRequest{Topic: tp.topic, Partition: tp.partition, Acks: cfg.acks,
			TimeoutMs: int32(cfg.produceTimeout.Milliseconds()), Records: b.data}
		if cfg.acks == 0 {
			ctx.Send(transport.BrokerPID(addr), req)
			s.unconfirmed[tp] = addr
			s.finish(b, -1, nil)
			continue
		}
		q.inflight++
		fut := ctx.RequestFuture(transport.BrokerPID(addr), req, cfg.requestTimeout)
		ctx.ReenterAfter(fut, func(res any, err error) { s.onResult(ctx, b, addr, res, err) })
	}
}

func (s *sender) onResult(ctx actor.Context, b *sealedBatch, addr string, res any, err error) {
	q := s.queue(b.tp)
	q.inflight--
	msg, err := decodeResult(addr, res, err)
	var base int64 = -1
	if err == nil {
		resp, ok := msg.(*messages.ProduceResponse)
		switch {
		case !ok:
			err = fmt.Errorf("unexpected produce answer %T", msg)
		case resp.Topic != b.tp.topic || resp.Partition != b.tp.partition:
			// Not the answer to this request: a broker answers for the
			// partition it was asked about.
			err = fmt.Errorf("%s answered a produce to %s-%d for %s-%d", addr, b.tp.topic, b.tp.partition, resp.Topic, resp.Partition)
		case resp.Error != messages.ErrorCode_NONE:
			err = &messages.Error{Code: resp.Error, Message: resp.ErrorMessage}
		default:
			base = resp.BaseOffset
		}
	}
	cfg := &s.p.cfg
	switch {
	case err == nil:
		q.acked(b)
		s.finish(b, base, nil)
	case s.idempotent() && errors.Is(err, messages.ErrorCode_OUT_OF_ORDER_SEQUENCE):
		// Not written: the leader misses an earlier batch. Not this batch's
		// fault, so no attempt counted: it goes again in order, or under a
		// new epoch if the gap stays.
		b.notInLog, b.lastErr = true, err
		q.requeue(b)
		q.draining = true
	case retriable(err) && b.attempts < cfg.retries && time.Since(b.created) < cfg.deliveryTimeout:
		b.attempts++
		b.lastErr = err
		q.requeue(b)
		q.draining = s.idempotent()
		q.retryAt = time.Now().Add(cfg.retryBackoff)
		if needsMetadata(err) {
			s.refresh(ctx, b.tp.topic)
		}
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(cfg.retryBackoff, func() { root.Send(self, retryDue{b.tp}) })
		s.p.cfg.logger.Debug("retrying produce", "topic", b.tp.topic, "partition", b.tp.partition, "attempt", b.attempts, "error", err)
		return
	default:
		s.fail(q, b, err)
	}
	s.trySend(ctx, b.tp)
}

// fail ends b with err. A numbered batch that may be missing from the log
// holds its partition back until its gap is resolved (see partitionQueue).
func (s *sender) fail(q *partitionQueue, b *sealedBatch, err error) {
	if s.idempotent() && q.failed(b) {
		q.draining = true
		s.p.cfg.logger.Debug("numbered batch failed for good", "topic", b.tp.topic, "partition", b.tp.partition,
			"base_sequence", b.seq, "error", err)
	}
	s.finish(b, -1, err)
}

// deliveryTimeout is the error of a batch that ran out of time; it matches
// both ErrRequestTimedOut and the error of the last attempt.
func deliveryTimeout(b *sealedBatch) error {
	timeout := &messages.Error{Code: messages.ErrorCode_REQUEST_TIMED_OUT,
		Message: fmt.Sprintf("delivery timeout expired for %s-%d after %d attempts", b.tp.topic, b.tp.partition, b.attempts+1)}
	if b.lastErr == nil {
		return timeout
	}
	return fmt.Errorf("%w; last attempt: %w", timeout, b.lastErr)
}

// refresh fetches metadata in the background and wakes every queue after.
func (s *sender) refresh(ctx actor.Context, topic string) {
	if s.refreshing {
		return
	}
	s.refreshing = true
	self, root, meta := ctx.Self(), ctx.ActorSystem().Root, s.p.meta
	backoff := s.p.cfg.retryBackoff
	go func() {
		meta.refreshSoon(topic)
		time.Sleep(backoff / 2)
		root.Send(self, metadataRefreshed{})
	}()
}

// finish calls every record's promise with its offset or err and frees its bytes.
func (s *sender) finish(b *sealedBatch, base int64, err error) {
	for i, pr := range b.recs {
		if err == nil {
			pr.r.Offset = base
			if base >= 0 {
				pr.r.Offset = base + int64(i)
			}
		} else {
			pr.r.Offset = -1
		}
		if pr.promise != nil {
			pr.promise(pr.r, err)
		}
	}
	// The buffer is reused only once the broker has answered: by then the
	// request has been serialized. An acks=0 or failed request may still be
	// queued in the transport, so its buffer is left to the GC.
	if err == nil && base >= 0 {
		s.p.pool.Put(b.data[:0])
	}
	s.p.release(b.size, int64(len(b.recs)))
}
