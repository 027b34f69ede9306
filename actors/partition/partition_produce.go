package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/actors/replica"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/replicadir"
	"github.com/sluicemq/sluice/transport"
)

// The leader's produce path: validation, the group commit, fsyncs, the
// producer state of idempotence and the answers once records are durable.

func (p *partitionActor) onProduce(ctx actor.Context, req *messages.ProduceRequest) {
	sender := ctx.Sender()
	if code, msg := p.unavailable(); code != messages.ErrorCode_NONE {
		p.respondProduce(ctx, sender, req, code, msg)
		return
	}
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		p.respondProduce(ctx, sender, req, messages.ErrorCode_INVALID_REQUIRED_ACKS, fmt.Sprintf("acks=%d", req.Acks))
		return
	}
	h, err := record.Validate(req.Records, p.cfg.Topic.MaxMessageBytes)
	switch {
	case errors.Is(err, record.ErrTooLarge):
		p.respondProduce(ctx, sender, req, messages.ErrorCode_RECORD_TOO_LARGE, err.Error())
		return
	case err != nil:
		p.respondProduce(ctx, sender, req, messages.ErrorCode_CORRUPT_RECORD, err.Error())
		return
	}
	if h.ProducerID >= 0 {
		if code, why := p.checkProducerOwner(ctx, h.ProducerID); code != messages.ErrorCode_NONE {
			p.respondProduce(ctx, sender, req, code, why)
			return
		}
	}
	if req.Acks == -1 && !p.leader.CanAcceptAcksAll() {
		p.respondProduce(ctx, sender, req, messages.ErrorCode_NOT_ENOUGH_REPLICAS,
			fmt.Sprintf("ISR %v is smaller than min.insync.replicas=%d", p.leader.ISR(), p.cfg.Topic.MinISR))
		return
	}
	p.pending = append(p.pending, pendingProduce{req: req, sender: sender, header: h, arrived: time.Now()})
	if !p.flushQueued {
		// The flush message queues behind every request already in the
		// mailbox, so one write and one fsync serve all of them.
		p.flushQueued = true
		ctx.Send(ctx.Self(), flushProduce{})
	}
}

// checkProducerOwner refuses, on a broker with principals, a batch whose
// producer id was not issued to the principal that sent it: another
// principal with Write on the topic could otherwise write as that producer
// (whose next batch would then be taken for a duplicate and never
// stored). This process's own requests carry no principal and pass.
func (p *partitionActor) checkProducerOwner(ctx actor.Context, id int64) (messages.ErrorCode, string) {
	principal := transport.Principal(ctx)
	if !p.cfg.Broker.Secure || principal == "" {
		return messages.ErrorCode_NONE, ""
	}
	owns, err := p.cfg.Broker.ProducerIDs.Owns(id, principal)
	switch {
	case err != nil:
		return messages.ErrorCode_LEADER_NOT_AVAILABLE, "producer ids cannot be checked yet: " + err.Error()
	case !owns:
		if p.ownerRefusals.Allow() {
			p.cfg.Logger.Warn("refused a batch whose producer id was issued to another principal", "partition", p.cfg.TP,
				"producer_id", id, "principal", principal, "peer", ctx.MessageHeader().Get(transport.PeerHeader))
		}
		return messages.ErrorCode_UNKNOWN_PRODUCER_ID, fmt.Sprintf("producer id %d was not issued to %s: ask for one with InitProducerId", id, principal)
	}
	return messages.ErrorCode_NONE, ""
}

// onFlush is the group commit: it assigns offsets to every pending batch
// (replica.Commit decides), appends them with one write, and hands the
// written requests to p.acks, which answers them once they are durable.
func (p *partitionActor) onFlush(ctx actor.Context) {
	p.flushQueued = false
	// p.pending stays set until the append returns, so that a panic inside
	// it still lets onStopping answer these requests.
	pending := p.pending
	if len(pending) == 0 || p.role != replica.Leader {
		return
	}
	now := time.Now()
	epoch := p.leader.Epoch()
	headers := make([]record.Header, len(pending))
	for i, pp := range pending {
		headers[i] = pp.header
	}
	view := p.producers.Begin()
	outcomes := replica.Commit(view, headers, p.log.LogEndOffset(), now)
	batches := make([][]byte, 0, len(pending))
	for i, pp := range pending {
		if outcomes[i].Appended {
			record.SetBaseOffset(pp.req.Records, outcomes[i].Base)
			record.SetLeaderEpoch(pp.req.Records, epoch)
			batches = append(batches, pp.req.Records)
		}
	}
	p.write(ctx, batches, func(ctx actor.Context, err error) {
		p.committed(ctx, pending, outcomes, view, epoch, now, err)
	})
}

// committed answers a group commit's requests or hands them to p.acks,
// once its write returned err.
func (p *partitionActor) committed(ctx actor.Context, pending []pendingProduce, outcomes []replica.Outcome,
	view *producerstate.Pending, epoch int32, now time.Time, err error) {
	p.pending = nil
	if err != nil {
		p.cfg.Logger.Error("append failed", "partition", p.cfg.TP, "error", err)
		for _, pp := range pending {
			p.respondProduce(ctx, pp.sender, pp.req, messages.ErrorCode_STORAGE_ERROR, err.Error())
		}
		if errors.Is(err, storage.ErrLogFailed) {
			// What reached the disk is unknown: offline until a restart
			// recovers the log from what is there.
			p.failLog(ctx, err)
		}
		return
	}
	view.Commit()
	p.cfg.Broker.Metrics.GroupCommit(len(pending))
	for i, pp := range pending {
		o := outcomes[i]
		switch {
		case o.Appended:
			p.metrics.Produced(int(pp.header.RecordCount), len(pp.req.Records))
		case o.Duplicate():
			p.cfg.Broker.Metrics.Duplicate()
		default:
			p.respondProduce(ctx, pp.sender, pp.req, o.Code, o.Text)
			continue
		}
		resp := &messages.ProduceResponse{Topic: pp.req.Topic, Partition: pp.req.Partition, BaseOffset: o.Base,
			LogStartOffset: p.log.LogStartOffset(), LeaderEpoch: epoch}
		if pp.req.Acks == 0 {
			// No acknowledgement, but a sender that asked is told the
			// batch was taken (written, not yet durable): the Kafka
			// listener holds an acks=0 request's bytes until then.
			actors.SendTo(ctx, pp.sender, resp)
			continue
		}
		// A duplicate of a durable batch may be answered at once; acks=all
		// still waits for the HW to pass it.
		p.answerAll(ctx, p.acks.Add(replica.Written[*actor.PID]{To: pp.sender, Resp: resp, Next: o.Next,
			Deadline: produceDeadline(now, pp.req.TimeoutMs), AcksAll: pp.req.Acks == -1, Arrived: pp.arrived}))
	}
	// Acknowledgements and the HW wait for the fsync, which runs while the
	// next requests are written; followers copy the batches meanwhile.
	p.requestSync(ctx)
	p.serveReplicaFetches(ctx)
	p.publishStatus()
}

// diskBoundWrites is a log that tells which writes wait on the disk.
type diskBoundWrites interface {
	WriteWaits(batches ...[]byte) bool
}

// write appends batches to the log, beside the actor when the write waits
// on the disk (storage.WALLog.WriteWaits: a segment roll fsyncs the
// segment it ends); then carries on, on the actor, with what it returned.
func (p *partitionActor) write(ctx actor.Context, batches [][]byte, then func(ctx actor.Context, err error)) {
	if len(batches) == 0 {
		then(ctx, nil)
		return
	}
	if w, ok := p.log.(diskBoundWrites); ok && w.WriteWaits(batches...) {
		l := p.log
		p.besideLog(ctx, func() error { return l.Write(batches...) }, then)
		return
	}
	then(ctx, p.log.Write(batches...))
}

// produceDeadline is when an acks=all request written at now times out.
func produceDeadline(now time.Time, timeoutMs int32) time.Time {
	if timeoutMs <= 0 {
		timeoutMs = 30000
	}
	return now.Add(time.Duration(timeoutMs) * time.Millisecond)
}

// syncDone reports an fsync of the log up to offset.
type syncDone struct {
	gen    uint64
	offset int64
	err    error
}

// requestSync starts an fsync of everything written, on another goroutine;
// with one already running, the next starts when it ends.
func (p *partitionActor) requestSync(ctx actor.Context) {
	if p.syncing || p.acks.Durable() >= p.log.LogEndOffset() {
		return
	}
	p.syncing = true
	offset, gen := p.log.LogEndOffset(), p.gen
	p.syncInBackground(ctx, func(err error) any { return syncDone{gen: gen, offset: offset, err: err} })
}

// syncInBackground makes everything written so far durable beside the
// actor, in the broker's sync wave when there is one, and then sends the
// actor the message done makes of the outcome.
func (p *partitionActor) syncInBackground(ctx actor.Context, done func(error) any) {
	// Only values captured here are used off the actor's goroutine.
	self, root, m := ctx.Self(), ctx.ActorSystem().Root, p.cfg.Broker.Metrics
	if t, ok := p.log.(syncTaker); ok && p.cfg.Broker.Syncer != nil {
		start := time.Now()
		p.cfg.Broker.Syncer.Submit(t.TakeSync(), func(err error) {
			m.Fsynced(time.Since(start)) // with the wait for the broker's sync wave
			root.Send(self, done(err))
		})
		return
	}
	fn := p.log.SyncFunc()
	go func() {
		start := time.Now()
		err := fn()
		m.Fsynced(time.Since(start))
		root.Send(self, done(err))
	}()
}

// syncTaker is a log whose syncs a storage.Syncer can run.
type syncTaker interface{ TakeSync() *storage.Sync }

// onSyncDone acknowledges what the fsync made durable.
func (p *partitionActor) onSyncDone(ctx actor.Context, msg syncDone) {
	if msg.gen != p.gen {
		return // the role changed meanwhile; stepDown answered the waiters
	}
	p.syncing = false
	if msg.err != nil {
		p.cfg.Logger.Error("fsync failed", "partition", p.cfg.TP, "error", msg.err)
		p.answerAll(ctx, p.acks.SyncFailed(msg.err.Error()))
		// What reached the disk is unknown, and a second fsync would not
		// tell: offline until a restart recovers the log from the disk.
		p.failLog(ctx, fmt.Errorf("fsync: %w", msg.err))
		return
	}
	p.answerAll(ctx, p.acks.Synced(msg.offset))
	if p.role == replica.Leader && p.leader.Appended(p.acks.Durable()) {
		p.onHWAdvanced(ctx) // the HW counts only durable data
	}
	p.serveReplicaFetches(ctx)
	p.requestSync(ctx)
	p.publishStatus()
}

// rebuildProducers replays every batch header of the log into a fresh
// producer state.
func (p *partitionActor) rebuildProducers() error {
	p.producers.Reset()
	return replayInto(p.producers, p.log, p.log.LogStartOffset())
}

// loadProducers restores the producer state on open: from the snapshot
// file and the batches after it when the snapshot fits the log, else by
// replaying the whole log.
func (p *partitionActor) loadProducers() error {
	p.snapshotAt = -1
	data, ok, err := p.dir().ReadProducerSnapshot()
	if err != nil {
		p.cfg.Logger.Warn("ignoring an unreadable producer state snapshot", "partition", p.cfg.TP, "error", err)
	}
	if ok {
		at, snaps, derr := producerstate.DecodeSnapshot(data)
		switch {
		case derr != nil:
			p.cfg.Logger.Warn("ignoring unreadable producer state snapshot", "partition", p.cfg.TP, "error", derr)
		case at < p.log.LogStartOffset() || at > p.log.LogEndOffset():
			// Taken of another log than this one (truncated, reset or cut
			// short by a crash since).
		default:
			p.producers.Restore(snaps)
			p.snapshotAt = at
			return p.replayProducers(at)
		}
		// Gone for good: once the log has grown past its offset again it
		// would look valid while it describes batches that are gone.
		if err := p.removeProducerSnapshot(); err != nil {
			return err
		}
	}
	return p.rebuildProducers()
}

// writeProducerSnapshot writes a snapshot of the producer state taken at
// offset at into the replica's directory and reports whether it did. It
// runs beside the actor.
func writeProducerSnapshot(cfg Config, at int64, snapshot []byte) bool {
	if err := replicadir.Dir(cfg.Dir).WriteProducerSnapshot(snapshot); err != nil {
		cfg.Logger.Warn("writing the producer state snapshot", "partition", cfg.TP, "offset", at, "error", err)
		return false
	}
	return true
}

// removeProducerSnapshot deletes the snapshot file, durably.
func (p *partitionActor) removeProducerSnapshot() error {
	if err := p.dir().RemoveProducerSnapshot(); err != nil {
		return err
	}
	p.snapshotAt = -1
	return nil
}

// replayProducers replays the batch headers from offset to the LEO.
func (p *partitionActor) replayProducers(from int64) error {
	return replayInto(p.producers, p.log, from)
}

// replayInto replays the batch headers of l from offset to its LEO into
// producers.
func replayInto(producers *producerstate.State, l storage.Log, from int64) error {
	for off := from; off < l.LogEndOffset(); {
		batches, err := l.Read(off, 8<<20, l.LogEndOffset())
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			break
		}
		for _, b := range batches {
			h, err := record.ParseHeader(b)
			if err != nil {
				return err
			}
			producers.Replay(replica.BatchOf(h), h.BaseOffset, time.UnixMilli(h.MaxTimestamp))
			off = h.NextOffset()
		}
	}
	return nil
}

// onHWAdvanced answers acks=all requests and parked fetches the HW now covers.
func (p *partitionActor) onHWAdvanced(ctx actor.Context) {
	if p.role != replica.Leader {
		return
	}
	// Followers learn the new HW from the answer to their parked fetch.
	defer p.serveReplicaFetches(ctx)
	p.answerAll(ctx, p.acks.HWAdvanced(p.leader.HighWatermark()))
	for id, f := range p.parked {
		if resp, ready := p.readFetch(f.req, false); ready {
			f.timer.Stop()
			delete(p.parked, id)
			p.sendFetch(ctx, f.sender, f.req, resp)
		}
	}
}

// answerAll sends written requests their answers, counted in the produce
// metrics.
func (p *partitionActor) answerAll(ctx actor.Context, ws []replica.Written[*actor.PID]) {
	for _, w := range ws {
		if w.Resp.Error == messages.ErrorCode_NONE {
			p.cfg.Broker.Metrics.Acknowledged(w.AcksAll, time.Since(w.Arrived))
		} else {
			p.cfg.Broker.Metrics.RequestError("ProduceRequest", w.Resp.Error)
		}
		actors.SendTo(ctx, w.To, w.Resp)
	}
}

func (p *partitionActor) respondProduce(ctx actor.Context, sender *actor.PID, req *messages.ProduceRequest, code messages.ErrorCode, msg string) {
	p.cfg.Broker.Metrics.RequestError("ProduceRequest", code)
	if req.Acks == 0 && code != messages.ErrorCode_NONE {
		p.cfg.Logger.Debug("acks=0 produce failed", "partition", p.cfg.TP, "error", code, "message", msg)
	}
	actors.SendTo(ctx, sender, &messages.ProduceResponse{Topic: req.Topic, Partition: req.Partition, Error: code, ErrorMessage: msg, BaseOffset: -1})
}

// onDescribeProducers lists, on the leader, the idempotent producers whose
// sequences the partition tracks.
func (p *partitionActor) onDescribeProducers(ctx actor.Context, req *messages.DescribeProducersRequest) {
	resp := &messages.DescribeProducersResponse{Topic: req.Topic, Partition: req.Partition}
	if code, msg := p.unavailable(); code != messages.ErrorCode_NONE {
		resp.Error, resp.ErrorMessage = code, msg
		actors.Respond(ctx, resp)
		return
	}
	for _, ps := range p.producers.Snapshot() {
		if len(ps.Batches) == 0 {
			continue
		}
		last := ps.Batches[len(ps.Batches)-1]
		resp.Producers = append(resp.Producers, &messages.ActiveProducer{ProducerId: ps.ProducerID, ProducerEpoch: int32(ps.Epoch),
			LastSequence: last.LastSequence, LastTimestamp: last.MaxTimestamp})
	}
	actors.Respond(ctx, resp)
}
