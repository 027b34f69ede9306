package partition

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/replication"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
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

// followerLoop is the state of a follower replica.
type followerLoop struct {
	leader int32
	addr   string // the leader broker's address; "" until known
	epoch  int32
	hw     int64
	// truncated is set once truncation by epoch agrees with the leader;
	// only then are fetched batches and the leader's HW applied.
	truncated bool
	backoff   time.Duration
}

// ---- leader side ----------------------------------------------------------

func (p *partitionActor) replicaFetchError(req *messages.ReplicaFetchRequest, code messages.ErrorCode, msg string) *messages.ReplicaFetchResponse {
	resp := &messages.ReplicaFetchResponse{Topic: req.Topic, Partition: req.Partition, Error: code, ErrorMessage: msg,
		HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1, LeaderEpoch: -1}
	if p.log != nil {
		resp.LogStartOffset, resp.LogEndOffset = p.log.LogStartOffset(), p.log.LogEndOffset()
	}
	if p.role == roleLeader {
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
	switch {
	case epoch < mine:
		return messages.ErrorCode_FENCED_LEADER_EPOCH, fmt.Sprintf("follower at epoch %d, leader at %d", epoch, mine)
	case epoch > mine:
		return messages.ErrorCode_UNKNOWN_LEADER_EPOCH, fmt.Sprintf("follower at epoch %d, leader at %d", epoch, mine)
	case replica == p.cfg.BrokerID || !slices.Contains(p.state.Replicas, replica):
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
	if len(resp.Batches) > 0 || resp.Error != messages.ErrorCode_NONE || req.MaxWaitMs <= 0 {
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

// readReplicaFetch reads everything the leader has on disk after the fetch
// offset, committed or not: followers copy the leader's log up to its
// durable end. (Data not yet fsync'd could still vanish in a crash of the
// leader's machine, leaving a follower with records the leader no longer
// has under the same epoch.)
func (p *partitionActor) readReplicaFetch(req *messages.ReplicaFetchRequest) *messages.ReplicaFetchResponse {
	resp := &messages.ReplicaFetchResponse{Topic: req.Topic, Partition: req.Partition,
		HighWatermark: p.leader.HighWatermark(), LogStartOffset: p.log.LogStartOffset(),
		LogEndOffset: p.log.LogEndOffset(), LeaderEpoch: p.leader.Epoch()}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 || maxBytes > p.cfg.Broker.MaxFetchBytes {
		maxBytes = p.cfg.Broker.MaxFetchBytes
	}
	batches, err := p.log.Read(req.FetchOffset, maxBytes, p.durable)
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
	for _, b := range batches {
		p.cfg.Broker.Metrics.ReplicatedOut(len(b))
	}
	return resp
}

// serveReplicaFetches answers parked follower fetches that now have data or
// a newer HW to learn.
func (p *partitionActor) serveReplicaFetches(ctx actor.Context) {
	if p.role != roleLeader || len(p.replicaParked) == 0 {
		return
	}
	end, hw := p.durable, p.leader.HighWatermark()
	for id, f := range p.replicaParked {
		if end > f.req.FetchOffset || hw > f.hw {
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
	if p.role != roleLeader {
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
	if time.Now().Before(p.proposeAfter) {
		p.leader.ProposalFailed() // too soon after a refusal; asked again later
		return
	}
	epochs := make(map[int32]int64, len(isr))
	for _, id := range isr {
		e := p.leader.FollowerEpoch(id)
		switch {
		case id == p.cfg.BrokerID:
			e = p.cfg.Broker.BrokerEpoch
		case e == 0:
			e = p.leader.ISREpoch(id)
		}
		if e != 0 {
			epochs[id] = e
		}
	}
	req := &messages.AlterPartitionRequest{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition, BrokerId: p.cfg.BrokerID,
		LeaderEpoch: p.leader.Epoch(), PartitionEpoch: p.leader.PartitionEpoch(), NewIsr: isr, IsrEpochs: epochs}
	p.cfg.Logger.Info("proposing ISR change", "partition", p.cfg.TP, "isr", p.leader.ISR(), "proposed", isr)
	gen := p.gen
	fut := ctx.RequestFuture(ctx.Parent(), req, 5*time.Second)
	ctx.ReenterAfter(fut, func(res any, err error) {
		if gen != p.gen || p.role != roleLeader {
			return
		}
		resp, ok := res.(*messages.AlterPartitionResponse)
		if err != nil || !ok || resp.Error != messages.ErrorCode_NONE {
			reason := fmt.Sprint(err)
			if ok {
				reason = resp.Error.String() + ": " + resp.ErrorMessage
			}
			p.cfg.Logger.Warn("ISR change refused", "partition", p.cfg.TP, "proposed", isr, "reason", reason)
			if slices.Equal(p.leader.Proposed(), isr) {
				p.leader.ProposalFailed()
			}
			p.proposeAfter = time.Now().Add(proposalBackoff)
			return
		}
		p.onApplyState(ctx, &ApplyState{State: resp.State, Topic: p.cfg.Topic, LeaderAddr: ""})
	})
}

// ---- follower side --------------------------------------------------------

// becomeFollower starts following the state's leader at addr: truncate by
// epoch first, then fetch.
func (p *partitionActor) becomeFollower(ctx actor.Context, addr string) {
	hw := p.currentHW()
	p.stepDown(ctx, "now a follower")
	// The first fetch offset claims the whole log: it must be on disk (a
	// sync of the last role, or of an earlier run, may not have ended).
	if p.durable < p.log.LogEndOffset() {
		if err := p.log.SyncFunc()(); err != nil {
			p.failLog(ctx, fmt.Errorf("fsync: %w", err))
			return
		}
		p.durable = p.log.LogEndOffset()
	}
	st := p.state
	p.role = roleFollower
	p.follower = &followerLoop{leader: st.Leader, addr: addr, epoch: st.LeaderEpoch,
		hw: min(max(hw, p.log.LogStartOffset()), p.log.LogEndOffset())}
	p.cfg.Logger.Info("following", "partition", p.cfg.TP, "leader", st.Leader, "epoch", st.LeaderEpoch,
		"leo", p.log.LogEndOffset(), "hw", p.follower.hw)
	p.followerNext(ctx)
}

func (p *partitionActor) onFollowerStep(ctx actor.Context, msg followerStep) {
	if msg.gen == p.gen && p.role == roleFollower {
		p.followerNext(ctx)
	}
}

// followerNext sends the follower's next request.
func (p *partitionActor) followerNext(ctx actor.Context) {
	f := p.follower
	if f.addr == "" {
		return // the leader's broker is not known alive; a new state will come
	}
	if !f.truncated {
		p.sendEpochQuery(ctx)
	} else {
		p.sendReplicaFetch(ctx)
	}
}

// followerRetry pauses the follower loop with a growing backoff.
func (p *partitionActor) followerRetry(ctx actor.Context, why string) {
	f := p.follower
	f.backoff = min(max(2*f.backoff, 50*time.Millisecond), time.Second)
	p.cfg.Logger.Debug("follower retrying", "partition", p.cfg.TP, "leader", f.leader, "reason", why, "backoff", f.backoff)
	self, root, gen := ctx.Self(), ctx.ActorSystem().Root, p.gen
	time.AfterFunc(f.backoff, func() { root.Send(self, followerStep{gen}) })
}

// askLeader sends req to the leader's broker and hands the decoded answer
// (or an error) to then, unless the role changed in between.
func (p *partitionActor) askLeader(ctx actor.Context, req proto.Message, timeout time.Duration, then func(proto.Message, error)) {
	gen, addr := p.gen, p.follower.addr
	fut := ctx.RequestFuture(transport.BrokerPID(addr), req, timeout)
	ctx.ReenterAfter(fut, func(res any, err error) {
		if gen != p.gen || p.role != roleFollower {
			return
		}
		if err != nil {
			then(nil, fmt.Errorf("leader %s: %w", addr, err))
			return
		}
		switch m := res.(type) {
		case *actor.DeadLetterResponse:
			then(nil, fmt.Errorf("leader %s is not reachable", addr))
		case *messages.ErrorResponse:
			then(nil, fmt.Errorf("leader %s: %s: %s", addr, m.Error, m.Message))
		case proto.Message:
			then(m, nil)
		default:
			then(nil, fmt.Errorf("leader %s: unexpected answer %T", addr, res))
		}
	})
}

// sendEpochQuery asks the leader where our latest epoch ends in its log.
func (p *partitionActor) sendEpochQuery(ctx actor.Context) {
	epochs := p.log.Epochs()
	if len(epochs) == 0 {
		p.follower.truncated = true // nothing of ours can diverge
		p.sendReplicaFetch(ctx)
		return
	}
	req := &messages.OffsetForLeaderEpochRequest{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition,
		ReplicaId: p.cfg.BrokerID, CurrentLeaderEpoch: p.follower.epoch, Epoch: epochs[len(epochs)-1].Epoch}
	p.askLeader(ctx, req, replicaRequestTimeout, func(m proto.Message, err error) {
		resp, ok := m.(*messages.OffsetForLeaderEpochResponse)
		switch {
		case err != nil:
			p.followerRetry(ctx, err.Error())
		case !ok:
			p.followerRetry(ctx, fmt.Sprintf("unexpected answer %T", m))
		case resp.Error != messages.ErrorCode_NONE:
			p.followerRetry(ctx, resp.Error.String()+": "+resp.ErrorMessage)
		default:
			p.onEpochAnswer(ctx, resp)
		}
	})
}

// onEpochAnswer truncates as replication.TruncationStep decides, and asks
// again until the logs agree.
func (p *partitionActor) onEpochAnswer(ctx actor.Context, resp *messages.OffsetForLeaderEpochResponse) {
	f := p.follower
	leo := p.log.LogEndOffset()
	step := replication.TruncationStep(resp.Epoch, resp.EndOffset, p.log.EndOffsetForEpoch, leo, f.hw)
	if step.TruncateTo < leo {
		if step.TruncateTo < f.hw {
			// Below the HW is data every in-sync replica had: only an
			// unclean election can take it away.
			p.cfg.Logger.Error("truncating below the high watermark", "partition", p.cfg.TP,
				"hw", f.hw, "to", step.TruncateTo, "leader_epoch", resp.Epoch, "leader_end", resp.EndOffset)
		}
		to := max(step.TruncateTo, p.log.LogStartOffset())
		if err := p.dropProducerSnapshot(to); err != nil {
			p.failLog(ctx, fmt.Errorf("truncate: %w", err))
			return
		}
		if err := p.log.TruncateTo(to); err != nil {
			p.failLog(ctx, fmt.Errorf("truncate: %w", err))
			return
		}
		// What is written from here on is new: durable only once synced.
		p.durable = min(p.durable, p.log.LogEndOffset())
		p.cfg.Logger.Info("truncated divergent suffix", "partition", p.cfg.TP, "from", leo,
			"to", p.log.LogEndOffset(), "leader_epoch", resp.Epoch, "leader_end", resp.EndOffset)
		if err := p.rebuildProducers(); err != nil {
			p.failLog(ctx, fmt.Errorf("rebuilding producer state: %w", err))
			return
		}
		f.hw = min(f.hw, p.log.LogEndOffset())
	}
	f.backoff = 0
	if step.Done {
		f.truncated = true
	}
	p.publishStatus()
	p.followerNext(ctx)
}

// sendReplicaFetch pulls batches from our LEO on.
func (p *partitionActor) sendReplicaFetch(ctx actor.Context) {
	req := &messages.ReplicaFetchRequest{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition,
		ReplicaId: p.cfg.BrokerID, BrokerEpoch: p.cfg.Broker.BrokerEpoch, LeaderEpoch: p.follower.epoch, FetchOffset: p.log.LogEndOffset(),
		MaxBytes: int32(p.cfg.Broker.MaxFetchBytes), MaxWaitMs: int32(replicaFetchWait.Milliseconds())}
	p.askLeader(ctx, req, replicaFetchWait+replicaRequestTimeout, func(m proto.Message, err error) {
		resp, ok := m.(*messages.ReplicaFetchResponse)
		switch {
		case err != nil:
			p.followerRetry(ctx, err.Error())
		case !ok:
			p.followerRetry(ctx, fmt.Sprintf("unexpected answer %T", m))
		default:
			p.onReplicaFetchAnswer(ctx, req, resp)
		}
	})
}

// onReplicaFetchAnswer appends what the leader sent (one write and fsync),
// takes the leader's HW capped by our LEO, and fetches again at once: the
// next fetch offset is what tells the leader we have the data.
func (p *partitionActor) onReplicaFetchAnswer(ctx actor.Context, req *messages.ReplicaFetchRequest, resp *messages.ReplicaFetchResponse) {
	f := p.follower
	switch resp.Error {
	case messages.ErrorCode_NONE:
	case messages.ErrorCode_OFFSET_OUT_OF_RANGE:
		if resp.LogStartOffset > p.log.LogEndOffset() {
			// The leader no longer holds what we lack: start over at its log start.
			p.cfg.Logger.Warn("follower behind the leader's log start; resetting", "partition", p.cfg.TP,
				"leo", p.log.LogEndOffset(), "leader_log_start", resp.LogStartOffset)
			if err := p.log.Reset(resp.LogStartOffset); err != nil {
				p.failLog(ctx, fmt.Errorf("reset: %w", err))
				return
			}
			p.durable = p.log.LogEndOffset() // Reset fsyncs the new start
			p.producers.Reset()
			f.hw = p.log.LogEndOffset()
		} else {
			f.truncated = false // our log runs past the leader's: truncate again
		}
		p.followerNext(ctx)
		return
	default:
		p.followerRetry(ctx, resp.Error.String()+": "+resp.ErrorMessage)
		return
	}
	if len(resp.Batches) > 0 {
		err := p.log.Write(resp.Batches...)
		if err == nil {
			now := time.Now()
			for _, b := range resp.Batches {
				p.cfg.Broker.Metrics.ReplicatedIn(len(b))
				if h, herr := record.ParseHeader(b); herr == nil {
					p.producers.Appended(producerBatch(h), h.BaseOffset, now)
				}
			}
		}
		if err != nil {
			if errors.Is(err, storage.ErrLogFailed) {
				p.failLog(ctx, err)
				return
			}
			p.cfg.Logger.Warn("fetched batches do not continue the log; truncating again", "partition", p.cfg.TP, "error", err)
			f.truncated = false
			p.followerRetry(ctx, err.Error())
			return
		}
		// The next fetch offset tells the leader the batches are here:
		// it goes out once they are on disk.
		p.followerSync(ctx, resp.HighWatermark)
		return
	}
	p.onFollowerSynced(ctx, followerSynced{gen: p.gen, offset: p.log.LogEndOffset(), leaderHW: resp.HighWatermark})
}

// followerSynced reports the fsync of what a follower wrote up to offset,
// with the HW of the leader's answer that brought it.
type followerSynced struct {
	gen      uint64
	offset   int64
	leaderHW int64
	err      error
}

// followerSync makes what the follower wrote durable and then goes on
// with onFollowerSynced.
func (p *partitionActor) followerSync(ctx actor.Context, leaderHW int64) {
	done := followerSynced{gen: p.gen, offset: p.log.LogEndOffset(), leaderHW: leaderHW}
	p.syncInBackground(ctx, func(err error) any {
		done.err = err
		return done
	})
}

// onFollowerSynced takes the leader's HW (capped by our log) and fetches again.
func (p *partitionActor) onFollowerSynced(ctx actor.Context, msg followerSynced) {
	if msg.gen != p.gen || p.role != roleFollower {
		return // a new role synced before it started
	}
	if msg.err != nil {
		p.failLog(ctx, fmt.Errorf("fsync: %w", msg.err))
		return
	}
	p.durable = max(p.durable, msg.offset)
	f := p.follower
	f.backoff = 0
	f.hw = replication.FollowerHighWatermark(f.hw, msg.leaderHW, p.log.LogEndOffset())
	p.publishStatus()
	p.sendReplicaFetch(ctx)
}
