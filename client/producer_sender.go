package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// The producer's sender: an actor that sends sealed batches to partition
// leaders, in order per partition, and settles their promises.

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

	// inflight are the produce requests waiting for an answer, by number:
	// those to a broker whose connection breaks are settled at once
	// (brokerLost), not after their request timeout.
	inflight map[uint64]inflightProduce
	nextReq  uint64
	lost     *eventstream.Subscription
}

// inflightProduce is a produce request waiting for its answer.
type inflightProduce struct {
	addr  string
	batch *sealedBatch
}

type (
	retryDue          struct{ tp topicPartition }
	metadataRefreshed struct{}
	initRetry         struct{}
)

func newSender(p *Producer) *sender {
	return &sender{p: p, queues: map[topicPartition]*partitionQueue{}, producerID: -1,
		unconfirmed: map[topicPartition]string{}, inflight: map[uint64]inflightProduce{}}
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
	case *actor.Started:
		s.lost = watchLostBrokers(ctx)
	case brokerLost:
		for id, f := range s.inflight {
			if f.addr == msg.addr {
				delete(s.inflight, id)
				s.onResult(ctx, f.batch, f.addr, nil, errConnectionLost)
			}
		}
	case *actor.Stopping:
		ctx.ActorSystem().EventStream.Unsubscribe(s.lost)
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
		reply.Ask(ctx, brokerPID(ctx.ActorSystem(), addr), req, timeout, func(any, error) {
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
	reply.Ask(ctx, brokerPID(ctx.ActorSystem(), addr), req, s.p.cfg.requestTimeout, func(res any, err error) {
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
			ctx.Send(brokerPID(ctx.ActorSystem(), addr), req)
			s.unconfirmed[tp] = addr
			s.finish(b, -1, nil)
			continue
		}
		q.inflight++
		id := s.nextReq
		s.nextReq++
		s.inflight[id] = inflightProduce{addr: addr, batch: b}
		reply.Ask(ctx, brokerPID(ctx.ActorSystem(), addr), req, cfg.requestTimeout, func(res any, err error) {
			if _, ok := s.inflight[id]; !ok {
				return // settled when the connection broke
			}
			delete(s.inflight, id)
			s.onResult(ctx, b, addr, res, err)
		})
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
	s.p.batchAnswered(b.tp)
}
