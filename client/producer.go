package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
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
func Acks(a AckLevel) ProducerOpt { return producerOpt(func(c *config) { c.acks = int32(a) }) }

// Linger is how long a partition's batch waits for more records before it
// is sent. Default 0: a partition's records go out at once while none of
// its batches waits for an answer, and are batched while one does (as
// Kafka clients do with linger 0), so a lone record is not held back and
// a busy partition still sends full batches. A linger trades latency for
// fewer, larger requests.
func Linger(d time.Duration) ProducerOpt { return producerOpt(func(c *config) { c.linger = d }) }

// Compression compresses each batch's records with codec (Kafka's:
// record.Gzip, record.Snappy, record.LZ4, record.Zstd; default none).
// Brokers store batches as they arrive and consumers decompress them.
func Compression(codec record.Codec) ProducerOpt {
	return producerOpt(func(c *config) { c.compression = codec })
}

// BatchBytes is the size a partition's batch is sent at. Default 1 MiB, the
// broker's default max.message.bytes. A larger record goes in a batch of
// its own (see MaxRecordBytes).
func BatchBytes(n int) ProducerOpt { return producerOpt(func(c *config) { c.batchBytes = n }) }

// MaxRecordBytes is the largest record the producer sends (Kafka's
// max.request.size) when its topic's max.message.bytes is not known to be
// larger: a topic whose config raises the limit raises it here too. A
// record past it fails at once with RECORD_TOO_LARGE; the broker judges
// one within it by the topic's limit. Default 1 MiB.
func MaxRecordBytes(n int) ProducerOpt { return producerOpt(func(c *config) { c.maxRecordBytes = n }) }

// MaxBufferedBytes bounds the records held before Produce blocks. Default 64 MiB.
func MaxBufferedBytes(n int64) ProducerOpt { return producerOpt(func(c *config) { c.maxBuffered = n }) }

// MaxInFlight caps produce requests outstanding per partition. Default 5.
func MaxInFlight(n int) ProducerOpt { return producerOpt(func(c *config) { c.maxInFlight = n }) }

// Retries caps how often a batch is resent after a retriable error.
// Default: unlimited within DeliveryTimeout.
func Retries(n int) ProducerOpt { return producerOpt(func(c *config) { c.retries = n }) }

// RetryBackoff is the pause before a batch is resent. Default 100 ms.
func RetryBackoff(d time.Duration) ProducerOpt {
	return producerOpt(func(c *config) { c.retryBackoff = d })
}

// DeliveryTimeout bounds the time from Produce to the final answer. Default 2 min.
func DeliveryTimeout(d time.Duration) ProducerOpt {
	return producerOpt(func(c *config) { c.deliveryTimeout = d })
}

// MaxBlock bounds how long Produce waits for a topic's metadata (Kafka's
// max.block.ms): while no broker answers, or the topic's partitions have
// no leader yet. A topic the brokers say twice does not exist fails at
// once. Default 10 s.
func MaxBlock(d time.Duration) ProducerOpt { return producerOpt(func(c *config) { c.maxBlock = d }) }

// Idempotence turns the idempotent producer on or off. It is on by default
// with AllAcks: the producer gets a producer id and numbers its batches per
// partition, so that a batch retried after a lost answer or a leader
// failover is written once, in order. It needs AllAcks and at most 5
// requests in flight per partition. A batch that fails for good does not
// block its partition: if nothing shows it was written, the partition's
// sequences restart under the producer's next epoch.
func Idempotence(on bool) ProducerOpt { return producerOpt(func(c *config) { c.idempotence = &on }) }

// WithPartitioner sets the partitioner. Default KafkaPartitioner.
func WithPartitioner(p Partitioner) ProducerOpt {
	return producerOpt(func(c *config) { c.partitioner = p })
}

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
	// unanswered counts the partition's sealed batches without an answer
	// yet: with no linger, records wait in the open batch while it is
	// not zero.
	unanswered int
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
func NewProducer(broker string, opts ...ProducerOpt) (*Producer, error) {
	cfg := configOf(opts)
	if cfg.acks != 0 && cfg.acks != 1 && cfg.acks != -1 {
		return nil, fmt.Errorf("acks %d: want NoAck, LeaderAck or AllAcks", cfg.acks)
	}
	if cfg.batchBytes < 1024 || cfg.batchBytes > 64<<20 {
		return nil, fmt.Errorf("batch bytes %d: want 1 KiB to 64 MiB", cfg.batchBytes)
	}
	if cfg.maxRecordBytes < 1024 || cfg.maxRecordBytes > 64<<20 {
		return nil, fmt.Errorf("max record bytes %d: want 1 KiB to 64 MiB", cfg.maxRecordBytes)
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
	if limit := max(p.cfg.maxRecordBytes, p.meta.maxMessageBytes(r.Topic)); size+record.HeaderSize > limit {
		return &messages.Error{Code: messages.ErrorCode_RECORD_TOO_LARGE,
			Message: fmt.Sprintf("record of %d bytes exceeds the largest record of %d bytes (raise the topic's max.message.bytes, or MaxRecordBytes when the broker's default is larger)",
				size+record.HeaderSize, limit)}
	}
	part := p.cfg.partitioner.Partition(r, n)
	if part < 0 || part >= n {
		return &messages.Error{Code: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION,
			Message: fmt.Sprintf("topic %q has partitions 0 to %d, not partition %d", r.Topic, n-1, part)}
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
	if pb.builder.Len() >= p.cfg.batchBytes-64 || p.cfg.linger <= 0 && pb.unanswered == 0 {
		p.sealLocked(pb)
	}
	return nil
}

// batchAnswered notes that one of tp's batches has its answer; with no
// linger, the records that waited meanwhile go out now.
func (p *Producer) batchAnswered(tp topicPartition) {
	pb := p.buffer(tp)
	pb.mu.Lock()
	defer pb.mu.Unlock()
	pb.unanswered--
	if p.cfg.linger <= 0 && pb.unanswered == 0 {
		p.sealLocked(pb)
	}
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
	pb.unanswered++
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
