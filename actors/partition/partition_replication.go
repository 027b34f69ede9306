package partition

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/actors/replica"
	"github.com/sluicemq/sluice/actors/replication"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/replicadir"
	"github.com/sluicemq/sluice/transport"
)

// Replication between partition actors: followers pull from their leader
// with ReplicaFetch (after truncating by leader epoch with
// OffsetForLeaderEpoch); the leader feeds every fetch to replication.Leader
// and proposes ISR changes to the controller with AlterPartition.

// replicaFetchWait is how long a leader parks a follower's fetch without data.
const replicaFetchWait = 500 * time.Millisecond

// proposalBackoff spaces ISR proposals after the controller refused one.
const proposalBackoff = 500 * time.Millisecond

// replicaRequestTimeout bounds a follower's request beyond the park time.
// An answer can be lost (delivery is at most once; the first answers to a
// broker that just restarted at the same address go to the connection of
// its previous run): the follower then asks again, which is harmless, so
// the bound is short.
const replicaRequestTimeout = 3 * time.Second

type (
	replicaFetchExpired struct{ id uint64 }
	// followerStep resumes the follower loop of generation gen after a pause.
	followerStep struct{ gen uint64 }
)

// parkedReplicaFetch is a follower fetch waiting on the leader for data.
type parkedReplicaFetch struct {
	req    *messages.ReplicaFetchRequest
	sender *actor.PID
	hw     int64 // the HW when it was parked: a newer one is news too
	timer  *time.Timer
}

// followerLoop is a follower replica: the fetch loop's decisions and the
// address of the leader's broker they are sent to ("" until known).
type followerLoop struct {
	*replication.Follower
	addr string
}

// ---- leader side ----------------------------------------------------------

func (p *partitionActor) replicaFetchError(req *messages.ReplicaFetchRequest, code messages.ErrorCode, msg string) *messages.ReplicaFetchResponse {
	resp := &messages.ReplicaFetchResponse{Topic: req.Topic, Partition: req.Partition, Error: code, ErrorMessage: msg,
		HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1, LeaderEpoch: -1}
	if p.log != nil {
		resp.LogStartOffset, resp.LogEndOffset = p.log.LogStartOffset(), p.log.LogEndOffset()
	}
	if p.role == replica.Leader {
		resp.HighWatermark, resp.LeaderEpoch = p.leader.HighWatermark(), p.leader.Epoch()
	}
	return resp
}

// checkReplicaRequest fences a follower request by leader epoch and replica set.
func (p *partitionActor) checkReplicaRequest(replica, epoch int32) (messages.ErrorCode, string) {
	if code, msg := p.unavailable(); code != messages.ErrorCode_NONE {
		return code, msg
	}
	mine := p.leader.Epoch()
	switch replication.AdmitFollower(mine, epoch, p.cfg.BrokerID, replica, p.state.Replicas) {
	case replication.StaleEpoch:
		return messages.ErrorCode_FENCED_LEADER_EPOCH, fmt.Sprintf("follower at epoch %d, leader at %d", epoch, mine)
	case replication.UnknownEpoch:
		return messages.ErrorCode_UNKNOWN_LEADER_EPOCH, fmt.Sprintf("follower at epoch %d, leader at %d", epoch, mine)
	case replication.NotAFollower:
		return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("broker %d is not a follower of %s", replica, p.cfg.TP)
	}
	return messages.ErrorCode_NONE, ""
}

// onReplicaFetch records the follower's progress (its fetch offset is its
// LEO) and answers with the batches after it, parking the fetch when there
// are none yet.
func (p *partitionActor) onReplicaFetch(ctx actor.Context, req *messages.ReplicaFetchRequest) {
	sender := ctx.Sender()
	if code, msg := p.checkReplicaRequest(req.ReplicaId, req.LeaderEpoch); code != messages.ErrorCode_NONE {
		actors.SendTo(ctx, sender, p.replicaFetchError(req, code, msg))
		return
	}
	start, leo := p.log.LogStartOffset(), p.log.LogEndOffset()
	if req.FetchOffset < start || req.FetchOffset > leo {
		actors.SendTo(ctx, sender, p.replicaFetchError(req, messages.ErrorCode_OFFSET_OUT_OF_RANGE,
			fmt.Sprintf("fetch offset %d is outside [%d, %d]", req.FetchOffset, start, leo)))
		return
	}
	hwMoved, propose := p.leader.FollowerFetched(req.ReplicaId, req.FetchOffset, req.BrokerEpoch, time.Now())
	if propose != nil {
		p.proposeISR(ctx, propose)
	}
	if hwMoved {
		p.onHWAdvanced(ctx)
	}
	resp := p.readReplicaFetch(req)
	if !replica.FollowerFetchWaits(len(resp.Batches), resp.Error, req.MaxWaitMs) {
		actors.SendTo(ctx, sender, resp)
		p.publishStatus()
		return
	}
	p.nextFetchID++
	id := p.nextFetchID
	self, root := ctx.Self(), ctx.ActorSystem().Root
	wait := min(time.Duration(req.MaxWaitMs)*time.Millisecond, replicaFetchWait)
	p.replicaParked[id] = &parkedReplicaFetch{req: req, sender: sender, hw: p.leader.HighWatermark(),
		timer: time.AfterFunc(wait, func() { root.Send(self, replicaFetchExpired{id}) })}
	p.publishStatus()
}

// readReplicaFetch reads everything the leader has written after the
// fetch offset, committed or not and on disk or not yet, as Kafka's
// leaders do: the followers' writes and fsyncs overlap the leader's own.
// The HW still counts only what the leader has on disk (Leader.Appended
// gets the durable end), so nothing is acknowledged before every in-sync
// replica, the leader included, has it durably. A follower may so hold
// records the leader loses in a crash before its fsync: they were never
// acknowledged, and the leader does not lead that epoch again after a
// restart (replica.AwaitDecision), so the next leader's epochs truncate
// them away wherever they diverge.
func (p *partitionActor) readReplicaFetch(req *messages.ReplicaFetchRequest) *messages.ReplicaFetchResponse {
	resp := &messages.ReplicaFetchResponse{Topic: req.Topic, Partition: req.Partition,
		HighWatermark: p.leader.HighWatermark(), LogStartOffset: p.log.LogStartOffset(),
		LogEndOffset: p.log.LogEndOffset(), LeaderEpoch: p.leader.Epoch()}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 || maxBytes > p.cfg.Broker.MaxFetchBytes {
		maxBytes = p.cfg.Broker.MaxFetchBytes
	}
	throttled := p.catchUpRate(req.ReplicaId) > 0
	if throttled {
		allowed := p.catchUpAllowed(req.ReplicaId)
		if allowed <= 0 {
			return resp // none now: the fetch waits, or is answered empty
		}
		maxBytes = min(maxBytes, int(allowed))
	}
	batches, err := p.log.Read(req.FetchOffset, maxBytes, p.log.LogEndOffset())
	if err != nil {
		code := messages.ErrorCode_STORAGE_ERROR
		if errors.Is(err, storage.ErrCorrupt) {
			code = messages.ErrorCode_CORRUPT_RECORD
		}
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			code = messages.ErrorCode_OFFSET_OUT_OF_RANGE
		}
		p.corruptRead(err)
		return p.replicaFetchError(req, code, err.Error())
	}
	resp.Batches = batches
	sent := 0
	for _, b := range batches {
		p.cfg.Broker.Metrics.ReplicatedOut(len(b))
		sent += len(b)
	}
	if throttled {
		p.cfg.Broker.CatchUp.Spend(sent)
	}
	if p.state != nil && slices.Contains(p.state.AddingReplicas, req.ReplicaId) {
		p.cfg.Broker.Metrics.ReassignedOut(sent)
	}
	return resp
}

// catchUpRate is the bytes per second the broker may send to follower id
// in all (0: no limit): the move's throttle when the replica is one a
// reassignment adds.
func (p *partitionActor) catchUpRate(id int32) int64 {
	if p.cfg.Broker.CatchUp == nil || p.state == nil || !slices.Contains(p.state.AddingReplicas, id) {
		return 0
	}
	return p.state.ReassignmentThrottle
}

// catchUpAllowed is how many bytes follower id may be sent now (<= 0:
// none), when it is throttled.
func (p *partitionActor) catchUpAllowed(id int32) int64 {
	return p.cfg.Broker.CatchUp.Available(p.catchUpRate(id), time.Now())
}

// serveReplicaFetches answers parked follower fetches that now have data or
// a newer HW to learn.
func (p *partitionActor) serveReplicaFetches(ctx actor.Context) {
	if p.role != replica.Leader || len(p.replicaParked) == 0 {
		return
	}
	end, hw := p.log.LogEndOffset(), p.leader.HighWatermark()
	for id, f := range p.replicaParked {
		if p.catchUpRate(f.req.ReplicaId) > 0 && p.catchUpAllowed(f.req.ReplicaId) <= 0 {
			continue // throttled: it waits for its timer
		}
		if replica.FollowerFetchNews(f.req.FetchOffset, f.hw, end, hw) {
			f.timer.Stop()
			delete(p.replicaParked, id)
			actors.SendTo(ctx, f.sender, p.readReplicaFetch(f.req))
		}
	}
}

func (p *partitionActor) onReplicaFetchExpired(ctx actor.Context, id uint64) {
	f, ok := p.replicaParked[id]
	if !ok {
		return
	}
	delete(p.replicaParked, id)
	if p.role != replica.Leader {
		actors.SendTo(ctx, f.sender, p.replicaFetchError(f.req, messages.ErrorCode_NOT_LEADER, "leadership moved"))
		return
	}
	actors.SendTo(ctx, f.sender, p.readReplicaFetch(f.req))
}

// releaseReplicaFetches answers every parked follower fetch with code.
func (p *partitionActor) releaseReplicaFetches(ctx actor.Context, code messages.ErrorCode, why string) {
	for id, f := range p.replicaParked {
		f.timer.Stop()
		delete(p.replicaParked, id)
		actors.SendTo(ctx, f.sender, p.replicaFetchError(f.req, code, why))
	}
}

// onOffsetForLeaderEpoch tells a follower where an epoch ends in the
// leader's log, for its truncation.
func (p *partitionActor) onOffsetForLeaderEpoch(ctx actor.Context, req *messages.OffsetForLeaderEpochRequest) {
	resp := &messages.OffsetForLeaderEpochResponse{Topic: req.Topic, Partition: req.Partition, Epoch: -1, EndOffset: -1}
	check := p.checkReplicaRequest
	if req.ReplicaId < 0 {
		// A consumer checking whether the log was truncated under what it
		// read (KIP-320): the leader's epoch check, as for its fetches.
		check = func(_, epoch int32) (messages.ErrorCode, string) {
			if code, msg := p.unavailable(); code != messages.ErrorCode_NONE {
				return code, msg
			}
			return p.checkEpoch(epoch)
		}
	}
	if code, msg := check(req.ReplicaId, req.CurrentLeaderEpoch); code != messages.ErrorCode_NONE {
		resp.Error, resp.ErrorMessage = code, msg
		actors.Respond(ctx, resp)
		return
	}
	if epoch, end, ok := p.log.EndOffsetForEpoch(req.Epoch); ok {
		resp.Epoch, resp.EndOffset = epoch, end
	}
	actors.Respond(ctx, resp)
}

// proposeISR asks the controller, through this broker, to commit isr. The
// answer (the committed state) comes back to this actor; until then the
// leader computes its HW over the ISR and the proposal both.
//
// replication.Leader keeps at most one proposal in flight; this answer only
// clears it if it is still the one in flight (a commit seen through the
// metadata may have cleared it, and a newer proposal may have gone out).
func (p *partitionActor) proposeISR(ctx actor.Context, isr []int32) {
	req := &messages.AlterPartitionRequest{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition, BrokerId: p.cfg.BrokerID,
		LeaderEpoch: p.leader.Epoch(), PartitionEpoch: p.leader.PartitionEpoch(), NewIsr: isr,
		IsrEpochs: p.leader.ProposalEpochs(isr, p.cfg.Broker.BrokerEpoch)}
	p.cfg.Logger.Info("proposing ISR change", "partition", p.cfg.TP, "isr", p.leader.ISR(), "proposed", isr)
	gen := p.gen
	reply.Ask(ctx, ctx.Parent(), req, 5*time.Second, func(res any, err error) {
		p.resumeOnActor(func() { p.onISRAnswer(ctx, gen, isr, res, err) })
	})
}

// onISRAnswer takes the controller's answer to an ISR proposal.
func (p *partitionActor) onISRAnswer(ctx actor.Context, gen uint64, isr []int32, res any, err error) {
	if gen != p.gen || p.role != replica.Leader {
		return
	}
	resp, ok := res.(*messages.AlterPartitionResponse)
	if err != nil || !ok || resp.Error != messages.ErrorCode_NONE {
		reason := fmt.Sprint(err)
		if ok {
			reason = resp.Error.String() + ": " + resp.ErrorMessage
		}
		p.cfg.Logger.Warn("ISR change refused", "partition", p.cfg.TP, "proposed", isr, "reason", reason)
		p.leader.ProposalRefused(isr, time.Now())
		return
	}
	p.onApplyState(ctx, &ApplyState{State: resp.State, Topic: p.cfg.Topic, LeaderAddr: ""})
}

// ---- follower side --------------------------------------------------------
//
// replication.Follower decides; the methods below send its requests, write
// and truncate the log, run its timers and report each outcome back.

// logState is what the follower's decisions read of the log.
func (p *partitionActor) logState() replication.LogState {
	st := replication.LogState{Start: p.log.LogStartOffset(), End: p.log.LogEndOffset(), LatestEpoch: -1}
	if epochs := p.log.Epochs(); len(epochs) > 0 {
		st.LatestEpoch = epochs[len(epochs)-1].Epoch
	}
	return st
}

// becomeFollower starts following the state's leader at addr: truncate by
// epoch first, then fetch.
func (p *partitionActor) becomeFollower(ctx actor.Context, addr string) {
	hw := p.currentHW()
	p.stepDown(ctx, "now a follower")
	st := p.state
	p.role = replica.Follower
	p.follower = &followerLoop{Follower: replication.NewFollower(st.Leader, st.LeaderEpoch, hw, p.logState()), addr: addr}
	p.cfg.Logger.Info("following", "partition", p.cfg.TP, "leader", st.Leader, "epoch", st.LeaderEpoch,
		"leo", p.log.LogEndOffset(), "hw", p.follower.HighWatermark())
	if p.acks.Durable() < p.log.LogEndOffset() {
		// The first fetch offset claims the whole log: it goes out once the
		// log is on disk (a sync of the last role, or of an earlier run,
		// may not have ended), after a sync beside the actor.
		done := followerSynced{gen: p.gen, offset: p.log.LogEndOffset(), leaderHW: -1}
		p.syncInBackground(ctx, func(err error) any {
			done.err = err
			return done
		})
		return
	}
	p.followerNext(ctx)
}

func (p *partitionActor) onFollowerStep(ctx actor.Context, msg followerStep) {
	if msg.gen == p.gen && p.role == replica.Follower {
		p.followerNext(ctx)
	}
}

// followerNext carries out the follower's next step.
func (p *partitionActor) followerNext(ctx actor.Context) {
	p.followerDo(ctx, p.follower.Next(p.logState()))
}

// followerDo sends the step's request, or pauses the loop for its backoff.
func (p *partitionActor) followerDo(ctx actor.Context, step replication.Step) {
	f := p.follower
	if f.addr == "" {
		return // the leader's broker is not known alive; a new state will come
	}
	switch step.Kind {
	case replication.AskEpochEnd:
		p.sendEpochQuery(ctx, step.Epoch)
	case replication.Fetch:
		p.sendReplicaFetch(ctx, step.Offset)
	case replication.Wait:
		p.cfg.Logger.Debug("follower retrying", "partition", p.cfg.TP, "leader", f.Leader(), "reason", step.Reason, "backoff", step.Backoff)
		self, root, gen := ctx.Self(), ctx.ActorSystem().Root, p.gen
		time.AfterFunc(step.Backoff, func() { root.Send(self, followerStep{gen}) })
	}
}

// followerFailed pauses the loop after a request without a usable answer.
func (p *partitionActor) followerFailed(ctx actor.Context, why string) {
	p.followerDo(ctx, p.follower.Failed(why))
}

// askLeader sends req to the leader's broker and hands the decoded answer
// (or an error) to then, unless the role changed in between.
func (p *partitionActor) askLeader(ctx actor.Context, req proto.Message, timeout time.Duration, then func(proto.Message, error)) {
	gen, addr := p.gen, p.follower.addr
	reply.Ask(ctx, transport.BrokerPID(addr), req, timeout, func(res any, err error) {
		p.resumeOnActor(func() { p.onLeaderAnswer(gen, addr, res, err, then) })
	})
}

// onLeaderAnswer hands an answer of the leader to then, unless the role
// changed since the request went out.
func (p *partitionActor) onLeaderAnswer(gen uint64, addr string, res any, err error, then func(proto.Message, error)) {
	if gen != p.gen || p.role != replica.Follower {
		return
	}
	switch m := res.(type) {
	case nil:
		if errors.Is(err, actor.ErrDeadLetter) {
			then(nil, fmt.Errorf("leader %s is not reachable", addr))
		} else {
			then(nil, fmt.Errorf("leader %s: %w", addr, err))
		}
	case *messages.ErrorResponse:
		then(nil, fmt.Errorf("leader %s: %s: %s", addr, m.Error, m.Message))
	case proto.Message:
		then(m, nil)
	default:
		then(nil, fmt.Errorf("leader %s: unexpected answer %T", addr, res))
	}
}

// sendEpochQuery asks the leader where epoch (our latest) ends in its log.
func (p *partitionActor) sendEpochQuery(ctx actor.Context, epoch int32) {
	req := &messages.OffsetForLeaderEpochRequest{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition,
		ReplicaId: p.cfg.BrokerID, CurrentLeaderEpoch: p.follower.Epoch(), Epoch: epoch}
	p.askLeader(ctx, req, replicaRequestTimeout, func(m proto.Message, err error) {
		resp, ok := m.(*messages.OffsetForLeaderEpochResponse)
		switch {
		case err != nil:
			p.followerFailed(ctx, err.Error())
		case !ok:
			p.followerFailed(ctx, fmt.Sprintf("unexpected answer %T", m))
		case resp.Error != messages.ErrorCode_NONE:
			p.followerFailed(ctx, resp.Error.String()+": "+resp.ErrorMessage)
		default:
			p.onEpochAnswer(ctx, resp)
		}
	})
}

// onEpochAnswer truncates as the follower decides, and goes on (asking
// again until the logs agree). The truncation runs beside the actor.
func (p *partitionActor) onEpochAnswer(ctx actor.Context, resp *messages.OffsetForLeaderEpochResponse) {
	f := p.follower
	leo, hw := p.log.LogEndOffset(), f.HighWatermark()
	step := f.EpochAnswered(resp.Epoch, resp.EndOffset, p.log.EndOffsetForEpoch, p.logState())
	if step.TruncateTo >= leo {
		p.publishStatus()
		p.followerNext(ctx)
		return
	}
	if step.TruncateTo < hw {
		// Below the HW is data every in-sync replica had: only an
		// unclean election can take it away.
		p.cfg.Logger.Error("truncating below the high watermark", "partition", p.cfg.TP,
			"hw", hw, "to", step.TruncateTo, "leader_epoch", resp.Epoch, "leader_end", resp.EndOffset)
	}
	truncate := p.truncation(step.TruncateTo)
	// No role change comes in between: what arrives meanwhile waits.
	p.besideLog(ctx, truncate.run, func(ctx actor.Context, err error) {
		if err != nil {
			p.failLog(ctx, fmt.Errorf("truncate: %w", err))
			return
		}
		truncate.apply(p)
		p.cfg.Logger.Info("truncated divergent suffix", "partition", p.cfg.TP, "from", leo,
			"to", p.log.LogEndOffset(), "leader_epoch", resp.Epoch, "leader_end", resp.EndOffset)
		f.LogTruncated(p.logState())
		p.publishStatus()
		p.followerNext(ctx)
	})
}

// truncation cuts the log at an offset beside the actor, with the producer
// state that reflects what is cut: a snapshot of the cut part goes first,
// and the state is rebuilt from the log that remains.
type truncation struct {
	log       storage.Log
	offset    int64
	producers *producerstate.State
	dropSnap  bool
	dir       replicadir.Dir
}

// truncation prepares the cut at offset; run does it, apply adopts its
// outcome on the actor.
func (p *partitionActor) truncation(offset int64) *truncation {
	return &truncation{log: p.log, offset: offset, dir: p.dir(),
		// A snapshot still being written may be past the cut too.
		dropSnap:  p.snapshotAt >= 0 && p.snapshotAt > offset || p.writing != nil,
		producers: newProducerState(p.cfg)}
}

func (t *truncation) run() error {
	if t.dropSnap {
		if err := t.dir.RemoveProducerSnapshot(); err != nil {
			return err
		}
	}
	if err := t.log.TruncateTo(t.offset); err != nil {
		return err
	}
	if err := replayInto(t.producers, t.log, t.log.LogStartOffset()); err != nil {
		return fmt.Errorf("rebuilding producer state: %w", err)
	}
	return nil
}

func (t *truncation) apply(p *partitionActor) {
	if t.dropSnap {
		p.snapshotAt = -1
	}
	p.producers = t.producers
	// What is written from here on is new: durable only once synced.
	p.acks.Truncated(p.log.LogEndOffset())
}

// sendReplicaFetch pulls batches from offset (our LEO) on.
func (p *partitionActor) sendReplicaFetch(ctx actor.Context, offset int64) {
	req := &messages.ReplicaFetchRequest{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition,
		ReplicaId: p.cfg.BrokerID, BrokerEpoch: p.cfg.Broker.BrokerEpoch, LeaderEpoch: p.follower.Epoch(), FetchOffset: offset,
		MaxBytes: int32(p.cfg.Broker.MaxFetchBytes), MaxWaitMs: int32(replicaFetchWait.Milliseconds())}
	p.askLeader(ctx, req, replicaFetchWait+replicaRequestTimeout, func(m proto.Message, err error) {
		resp, ok := m.(*messages.ReplicaFetchResponse)
		switch {
		case err != nil:
			p.followerFailed(ctx, err.Error())
		case !ok:
			p.followerFailed(ctx, fmt.Sprintf("unexpected answer %T", m))
		default:
			p.onReplicaFetchAnswer(ctx, resp)
		}
	})
}

// fetchAnswer reduces a leader's fetch answer to what the follower decides on.
func fetchAnswer(resp *messages.ReplicaFetchResponse) replication.FetchAnswer {
	ans := replication.FetchAnswer{HasBatches: len(resp.Batches) > 0,
		HighWatermark: resp.HighWatermark, LogStart: resp.LogStartOffset}
	switch resp.Error {
	case messages.ErrorCode_NONE:
		ans.Result = replication.FetchOK
	case messages.ErrorCode_OFFSET_OUT_OF_RANGE:
		ans.Result = replication.FetchOutOfRange
	default:
		ans.Result, ans.Reason = replication.FetchFailed, resp.Error.String()+": "+resp.ErrorMessage
	}
	return ans
}

// onReplicaFetchAnswer carries out the follower's decision on a fetch
// answer: append the batches (one write, then an fsync beside the actor),
// start the log over at the leader's log start, or send the next request.
func (p *partitionActor) onReplicaFetchAnswer(ctx actor.Context, resp *messages.ReplicaFetchResponse) {
	f := p.follower
	d := f.FetchAnswered(fetchAnswer(resp), p.logState())
	switch d.Action {
	case replication.ResetLog:
		p.cfg.Logger.Warn("follower behind the leader's log start; resetting", "partition", p.cfg.TP,
			"leo", p.log.LogEndOffset(), "leader_log_start", d.ResetTo)
		l, to := p.log, d.ResetTo
		p.besideLog(ctx, func() error { return l.Reset(to) }, func(ctx actor.Context, err error) {
			if err != nil {
				p.failLog(ctx, fmt.Errorf("reset: %w", err))
				return
			}
			p.acks.Reset(p.log.LogEndOffset()) // Reset fsyncs the new start
			p.producers.Reset()
			p.followerDo(ctx, f.LogReset(p.logState()))
		})
	case replication.AppendBatches:
		p.appendFetched(ctx, resp)
	case replication.SendNext:
		if resp.Error == messages.ErrorCode_NONE {
			// An answer without batches: what we hold was already durable.
			p.answerAll(ctx, p.acks.Synced(p.log.LogEndOffset()))
			p.publishStatus()
		}
		p.followerDo(ctx, d.Next)
	}
}

// appendFetched writes the fetched batches and makes them durable; the
// next fetch offset tells the leader they are here, so it goes out only
// once they are on disk (onFollowerSynced).
func (p *partitionActor) appendFetched(ctx actor.Context, resp *messages.ReplicaFetchResponse) {
	p.write(ctx, resp.Batches, func(ctx actor.Context, err error) { p.fetchedWritten(ctx, resp, err) })
}

// fetchedWritten goes on once the fetched batches' write returned err.
func (p *partitionActor) fetchedWritten(ctx actor.Context, resp *messages.ReplicaFetchResponse, err error) {
	if err != nil {
		if errors.Is(err, storage.ErrLogFailed) {
			p.failLog(ctx, err)
			return
		}
		p.cfg.Logger.Warn("fetched batches do not continue the log; truncating again", "partition", p.cfg.TP, "error", err)
		p.followerDo(ctx, p.follower.AppendRejected(err.Error()))
		return
	}
	now := time.Now()
	for _, b := range resp.Batches {
		p.cfg.Broker.Metrics.ReplicatedIn(len(b))
		if h, herr := record.ParseHeader(b); herr == nil {
			p.producers.Appended(replica.BatchOf(h), h.BaseOffset, now)
		}
	}
	done := followerSynced{gen: p.gen, offset: p.log.LogEndOffset(), leaderHW: resp.HighWatermark}
	p.syncInBackground(ctx, func(err error) any {
		done.err = err
		return done
	})
}

// followerSynced reports the fsync of what a follower wrote up to offset,
// with the HW of the leader's answer that brought it (-1 for the sync
// before the first request).
type followerSynced struct {
	gen      uint64
	offset   int64
	leaderHW int64
	err      error
}

// onFollowerSynced takes the leader's HW (capped by our log) and fetches again.
func (p *partitionActor) onFollowerSynced(ctx actor.Context, msg followerSynced) {
	if msg.gen != p.gen || p.role != replica.Follower {
		return // a new role synced before it started
	}
	if msg.err != nil {
		p.failLog(ctx, fmt.Errorf("fsync: %w", msg.err))
		return
	}
	p.answerAll(ctx, p.acks.Synced(msg.offset))
	step := p.follower.Synced(msg.leaderHW, p.logState())
	p.publishStatus()
	p.followerDo(ctx, step)
}
