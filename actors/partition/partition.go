package partition

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/actors/replica"
	"github.com/sluicemq/sluice/actors/replication"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/logspace"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/metrics"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/replicadir"
)

// Config is what a partition replica actor is started with.
type Config struct {
	TP       cluster.TopicPartition
	TopicID  string
	BrokerID int32
	// Dir holds this replica's files.
	Dir    string
	Topic  actors.TopicConfig
	Broker *actors.BrokerConfig
	// Status receives the replica's state for DescribeReplicas; the broker
	// actor reads it without messaging the partition.
	Status *atomic.Pointer[messages.ReplicaState]
	// Fetched counts the records the replica sends to consumers' fetches
	// (nil: not counted); the broker reports it with the status.
	Fetched *atomic.Int64
	// FailedLogs are the logs that failed in this process; a partition
	// whose log is among them does not open it.
	FailedLogs *FailedLogs
	Logger     *slog.Logger
}

// Messages between the broker and its partition actors, and the partition
// actor's own; they never leave the process.
type (
	// ApplyState hands the partition its latest controller state and the
	// address of the leader's broker ("" when the leader is not alive).
	ApplyState struct {
		State      *messages.PartitionState
		Topic      actors.TopicConfig
		LeaderAddr string
	}
	// Started asks the broker for the partition's state again: a
	// restarted partition actor starts with none.
	Started       struct{ TP cluster.TopicPartition }
	flushProduce  struct{}
	fetchExpired  struct{ id uint64 }
	partitionTick struct{}
)

// pendingProduce is a validated produce request waiting for the next group commit.
type pendingProduce struct {
	req     *messages.ProduceRequest
	sender  *actor.PID
	header  record.Header
	arrived time.Time
}

// parkedFetch is a consumer fetch waiting for data or its deadline.
type parkedFetch struct {
	id     uint64
	req    *messages.FetchRequest
	sender *actor.PID
	timer  *time.Timer
}

// partitionActor is one partition replica. It owns the replica's log; all
// protocol decisions come from replication.Leader.
type partitionActor struct {
	cfg Config
	log storage.Log
	// openErr is why the replica has no log; every request then gets
	// STORAGE_ERROR. corrupt is set when the log failed its checks on open.
	openErr           error
	corrupt           bool
	lastOfflineReport time.Time
	ownerRefusals     logspace.Every // spaces the log lines of refused producer ids
	// lostTo is set when the log came back shorter than its checkpointed
	// HW (a torn write, or a disk that lied about an fsync): records below
	// the HW, acknowledged to producers, are missing here. Until the log
	// reaches lostTo again (fetched from the leader), the replica does not
	// lead and reports itself to the controller as not in sync.
	lostTo int64
	// leaderAddr is the leader's address from the latest state.
	leaderAddr string

	state *messages.PartitionState
	role  replica.Role
	// leader is the replication state while leading, follower while following.
	leader   *replication.Leader
	follower *followerLoop
	// gen changes with every role change, so that answers to requests sent
	// under an earlier role (or an earlier incarnation of the actor) are
	// ignored.
	gen uint64
	// replicaParked holds follower fetches waiting for new data (leader only).
	replicaParked map[uint64]*parkedReplicaFetch

	// producers is the idempotent producers' sequence state, kept on every
	// replica so that a new leader dedupes retries of what the old one wrote.
	producers   *producerstate.State
	lastExpiry  time.Time
	pending     []pendingProduce
	flushQueued bool
	// acks holds written requests until their batches are durable (and,
	// with acks=all, replicated); it knows how far the log is on disk.
	acks        replica.Acks[*actor.PID]
	syncing     bool
	parked      map[uint64]*parkedFetch
	nextFetchID uint64

	// checkpointedHW is the HW while the replica has no role (from the
	// checkpoint, or the last role's); writtenHW is what the checkpoint
	// file holds (-1: nothing written in this run).
	checkpointedHW int64
	writtenHW      int64
	// working is set while disk work runs beside the actor; kept holds
	// what arrived meanwhile (beside.go). writing is set while the HW
	// checkpoint or producer snapshot is written beside it (writeFiles).
	working chan struct{}
	kept    []keptMessage
	writing chan struct{}
	// snapshotAt is the offset the producer state snapshot file was taken
	// at (-1: none known), lastSnapshot when.
	snapshotAt     int64
	lastSnapshot   time.Time
	lastCheckpoint time.Time
	lastRetention  time.Time
	ticker         *time.Ticker
	tickEvery      time.Duration
	stopTicker     chan struct{}
	self           *actor.PID
	root           *actor.RootContext
	// metrics counts this partition's produce and fetch traffic.
	metrics *metrics.Topic
}

// Props is what the broker spawns a partition replica's actor from.
func Props(cfg Config, opts ...actor.PropsOption) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &partitionActor{cfg: cfg, gen: nextGen(), parked: map[uint64]*parkedFetch{}, metrics: cfg.Broker.Metrics.Topic(cfg.TP.Topic),
			replicaParked: map[uint64]*parkedReplicaFetch{}, checkpointedHW: -1, writtenHW: -1, snapshotAt: -1,
			producers: newProducerState(cfg)}
	}, opts...)
}

// newProducerState is an empty producer state for the replica of cfg.
func newProducerState(cfg Config) *producerstate.State {
	return producerstate.NewState(producerstate.Config{ProducerIDExpiration: cfg.Broker.ProducerIDExpiration})
}

// A partition ticks every fastTick while requests wait on it (acks=all
// deadlines), and otherwise every idleTick (or a tenth of the replica lag
// time, if that is shorter): thousands of idle partitions ticking ten
// times a second kept a fifth of a core busy.
const (
	fastTick = 100 * time.Millisecond
	idleTick = time.Second
)

// tickInterval is how soon the partition needs its next tick.
func (p *partitionActor) tickInterval() time.Duration {
	if p.acks.Replicating() > 0 {
		return fastTick
	}
	return max(fastTick, min(idleTick, p.cfg.Broker.ReplicaLagTimeMax/10))
}

// retick sets the ticker to the interval the partition needs now.
func (p *partitionActor) retick() {
	if d := p.tickInterval(); p.ticker != nil && d != p.tickEvery {
		p.tickEvery = d
		p.ticker.Reset(d)
	}
}

// generations numbers the roles of every partition actor of the process:
// a restarted actor must not take an answer meant for its predecessor.
var generations atomic.Uint64

func nextGen() uint64 { return generations.Add(1) }

// dir is the replica's directory.
func (p *partitionActor) dir() replicadir.Dir { return replicadir.Dir(p.cfg.Dir) }

// Receive dispatches messages; every case calls one handler. Messages
// that arrive while disk work runs beside the actor wait for it (beside.go).
func (p *partitionActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		p.onStarted(ctx)
	case *actor.Restarting:
		p.onStopping(ctx, "partition restarting")
	case *actor.Stopping:
		p.onStopping(ctx, "partition stopping")
	default:
		p.receive(ctx)
	}
}

// handle dispatches a message that is not a lifecycle one.
func (p *partitionActor) handle(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *ApplyState:
		p.onApplyState(ctx, msg)
	case *messages.ProduceRequest:
		p.onProduce(ctx, msg)
	case flushProduce:
		p.onFlush(ctx)
	case syncDone:
		p.onSyncDone(ctx, msg)
	case logFailed:
		p.onLogFailed(ctx, msg)
	case *messages.ReplicaOfflineResponse:
		if msg.Error != messages.ErrorCode_NONE {
			p.cfg.Logger.Warn("the controller did not take the offline report", "partition", p.cfg.TP, "error", msg.Error, "reason", msg.ErrorMessage)
		}
	case *messages.ErrorResponse:
		p.cfg.Logger.Warn("error answer", "partition", p.cfg.TP, "error", msg.Error, "reason", msg.Message)
	case *messages.FetchRequest:
		p.onFetch(ctx, msg)
	case fetchExpired:
		p.onFetchExpired(ctx, msg.id)
	case *messages.ListOffsetsRequest:
		p.onListOffsets(ctx, msg)
	case *messages.ReplicaFetchRequest:
		p.onReplicaFetch(ctx, msg)
	case replicaFetchExpired:
		p.onReplicaFetchExpired(ctx, msg.id)
	case *messages.OffsetForLeaderEpochRequest:
		p.onOffsetForLeaderEpoch(ctx, msg)
	case *messages.DescribeProducersRequest:
		p.onDescribeProducers(ctx, msg)
	case followerStep:
		p.onFollowerStep(ctx, msg)
	case leaderSynced:
		p.onLeaderSynced(ctx, msg)
	case followerSynced:
		p.onFollowerSynced(ctx, msg)
	case partitionTick:
		p.onTick(ctx)
	case filesWritten:
		p.onFilesWritten(msg)
	default:
		actors.Unhandled(ctx)
	}
}

// onStarted opens the replica's storage beside the actor (what arrives
// meanwhile waits for it), then asks the broker for its state.
func (p *partitionActor) onStarted(ctx actor.Context) {
	p.self, p.root = ctx.Self(), ctx.ActorSystem().Root
	p.lastRetention = time.Now()
	p.startTicker(ctx)
	// The log of an earlier replica in the directory may still be closing.
	closed := p.cfg.Broker.Closings.Waiter(p.cfg.Dir)
	p.besideLog(ctx, func() error {
		closed()
		p.openStorage()
		return nil
	}, func(ctx actor.Context, _ error) {
		p.publishStatus()
		ctx.Send(ctx.Parent(), Started{TP: p.cfg.TP})
	})
}

// openStorage claims the partition directory, opens the log and restores
// the producer state and the checkpointed HW; a replica that cannot gets
// openErr. It runs beside the actor.
func (p *partitionActor) openStorage() {
	if err := p.claimDir(); err != nil {
		p.openErr = fmt.Errorf("partition directory: %w", err)
	} else if err := p.cfg.FailedLogs.get(p.cfg.Dir); err != nil {
		p.openErr = fmt.Errorf("the partition's storage failed; it is offline until the broker restarts: %w", err)
	} else {
		p.log, p.openErr = p.openLog()
		p.corrupt = isCorrupt(p.openErr)
	}
	if p.openErr == nil {
		if err := p.loadProducers(); err != nil {
			p.log.Close()
			p.log, p.openErr = nil, fmt.Errorf("rebuilding producer state: %w", err)
			p.corrupt = isCorrupt(err)
		}
	}
	if p.openErr != nil {
		p.cfg.Logger.Error("partition log unavailable", "partition", p.cfg.TP, "error", p.openErr)
	} else if hw, ok, err := storage.ReadCheckpoint(p.dir().Checkpoint()); err == nil && ok {
		p.checkpointedHW, p.writtenHW = hw, hw
		if leo := p.log.LogEndOffset(); leo < hw {
			p.lostTo = hw
			p.cfg.Logger.Error("the log lost records below its high watermark: it ends before its checkpointed HW "+
				"(a write torn by a crash, or a disk that did not keep an fsync'd write); the replica leaves the ISR "+
				"until it has fetched them again from the leader",
				"partition", p.cfg.TP, "log_end_offset", leo, "checkpointed_hw", hw, "records_lost", hw-leo)
		}
	} else if err != nil {
		p.cfg.Logger.Warn("ignoring unreadable high-watermark checkpoint", "partition", p.cfg.TP, "error", err)
	}
}

// claimDir makes the partition directory this topic's (a deleted topic
// of the same name may have left data there). It runs beside the actor.
func (p *partitionActor) claimDir() error {
	removed, err := p.dir().Claim(p.cfg.TopicID)
	if removed {
		p.cfg.Logger.Info("removed data of a deleted topic", "dir", p.cfg.Dir)
	}
	return err
}

// openLog opens the replica's log; the log is nil whenever err is not.
func (p *partitionActor) openLog() (storage.Log, error) {
	if err := p.dir().Create(); err != nil {
		return nil, err
	}
	if p.cfg.Broker.OpenLog != nil {
		return p.cfg.Broker.OpenLog(p.dir().Log(), p.cfg.Topic)
	}
	l, err := storage.OpenWAL(p.dir().Log(), storage.WALOptions{SegmentBytes: int(p.cfg.Topic.SegmentBytes),
		NoSync: p.cfg.Broker.UnsafeNoSync, Pool: p.cfg.Broker.LogPool}, p.cfg.Logger)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// startTicker sends partitionTick to self until the actor stops.
func (p *partitionActor) startTicker(ctx actor.Context) {
	p.tickEvery = p.tickInterval()
	p.ticker = time.NewTicker(p.tickEvery)
	p.stopTicker = make(chan struct{})
	self, root, ticker, stop := ctx.Self(), ctx.ActorSystem().Root, p.ticker, p.stopTicker
	go func() {
		for {
			select {
			case <-ticker.C:
				root.Send(self, partitionTick{})
			case <-stop:
				return
			}
		}
	}()
}

// onStopping fails everything in flight with a retriable error, and
// closes the log beside the actor. It runs before a supervised restart
// too, so the new incarnation reopens the log from disk.
func (p *partitionActor) onStopping(ctx actor.Context, why string) {
	if p.ticker != nil {
		p.ticker.Stop()
		close(p.stopTicker)
		p.ticker = nil
	}
	for _, pp := range p.pending {
		p.respondProduce(ctx, pp.sender, pp.req, messages.ErrorCode_NOT_LEADER, why)
	}
	p.pending = nil
	p.answerAll(ctx, p.acks.Abandon(messages.ErrorCode_REQUEST_TIMED_OUT, why))
	for id, f := range p.parked {
		f.timer.Stop()
		actors.SendTo(ctx, f.sender, p.fetchError(f.req, messages.ErrorCode_NOT_LEADER, why))
		delete(p.parked, id)
	}
	p.releaseReplicaFetches(ctx, messages.ErrorCode_NOT_LEADER, why)
	p.gen = nextGen()
	p.closeBeside()
}

// closeBeside closes the log of a stopping actor beside it, once the disk
// work and file writes still running have ended: it checkpoints the HW,
// closes the log (which fsyncs it) and records the producer state at its
// end. The stopped actor is done with p: from here only that goroutine
// reads it. What was kept meanwhile is dropped, as protoactor drops a
// stopped actor's mailbox: senders hear nothing and retry on their
// timeouts.
func (p *partitionActor) closeBeside() {
	working, writing := p.working, p.writing
	p.working, p.writing, p.kept = nil, nil, nil
	closed := p.cfg.Broker.Closings.Start(p.cfg.Dir)
	go func() {
		defer closed()
		if working != nil {
			<-working
		}
		if writing != nil {
			<-writing
		}
		p.closeLog()
	}()
}

// closeLog checkpoints the HW, closes the log and records the producer
// state at its end. It runs beside the actor.
func (p *partitionActor) closeLog() {
	if p.log == nil {
		return
	}
	if hw := p.currentHW(); hw >= 0 && hw != p.writtenHW {
		writeCheckpoint(p.cfg, hw)
	}
	leo := p.log.LogEndOffset()
	if err := p.log.Close(); err != nil {
		p.cfg.Logger.Warn("closing partition log", "partition", p.cfg.TP, "error", err)
	} else if p.openErr == nil && leo != p.snapshotAt {
		// Closing fsync'd the log: the snapshot covers all of it.
		writeProducerSnapshot(p.cfg, leo, producerstate.EncodeSnapshot(leo, p.producers.Snapshot()))
	}
	p.log = nil
}

// onApplyState adopts a newer controller state for this partition and
// turns the replica into a leader, a follower, or neither, as
// replica.Decide says.
func (p *partitionActor) onApplyState(ctx actor.Context, msg *ApplyState) {
	st := msg.State
	p.cfg.Topic = msg.Topic
	if p.role == replica.Leader && p.leader != nil && p.leader.SetMinISR(msg.Topic.MinISR) {
		p.onHWAdvanced(ctx) // a lower min.insync.replicas released the HW
	}
	change := replica.Change{Self: p.cfg.BrokerID, BrokerEpoch: p.cfg.Broker.BrokerEpoch, Current: p.state, Next: st,
		Role: p.role, LeaderAddr: msg.LeaderAddr, HasLog: p.log != nil, LostRecords: p.lostTo > 0}
	if p.follower != nil {
		change.FollowingAddr = p.follower.addr
	}
	step := replica.Decide(change)
	switch step {
	case replica.Ignore:
		return
	case replica.Readdress:
		// Only the leader's address may have become known.
		p.leaderAddr = msg.LeaderAddr
		if p.role == replica.Follower && msg.LeaderAddr != p.follower.addr {
			p.becomeFollower(ctx, msg.LeaderAddr)
		}
		return
	}
	prevISR := 0
	if p.state != nil {
		prevISR = len(p.state.Isr)
	}
	p.state = st
	p.leaderAddr = msg.LeaderAddr
	switch step {
	case replica.Unusable:
		p.becomeNone(ctx)
		p.unusable(ctx)
	case replica.YieldToInSync:
		p.becomeNone(ctx)
		p.reportOffline(ctx)
	case replica.AwaitDecision, replica.StepDown:
		p.becomeNone(ctx)
	case replica.ISRChanged:
		// The leader's proposal, the controller dropping a dead follower,
		// or a reassignment adding or removing replicas.
		p.cfg.Broker.Metrics.ISRChanged(prevISR, len(st.Isr))
		p.leader.ReplicasChanged(st.Replicas, time.Now())
		if p.leader.ISRCommitted(st.Isr, st.IsrEpochs, st.PartitionEpoch) {
			p.onHWAdvanced(ctx)
		}
	case replica.Lead:
		p.becomeLeader(ctx)
	case replica.KeepFollowing:
	case replica.Follow:
		p.becomeFollower(ctx, msg.LeaderAddr)
	}
	if p.lostTo > 0 {
		p.reportOffline(ctx)
	}
	p.publishStatus()
}

// currentHW is this replica's high watermark whatever its role.
func (p *partitionActor) currentHW() int64 {
	switch p.role {
	case replica.Leader:
		return p.leader.HighWatermark()
	case replica.Follower:
		return p.follower.HighWatermark()
	}
	return p.checkpointedHW
}

func (p *partitionActor) becomeLeader(ctx actor.Context) {
	hw := p.currentHW()
	p.stepDown(ctx, "leadership moved")
	// What the log holds now counts toward the HW only once it is on disk
	// (an earlier run may have died between its write and its fsync): the
	// leadership starts once a sync beside the actor has ended.
	if p.acks.Durable() < p.log.LogEndOffset() {
		gen, offset := p.gen, p.log.LogEndOffset()
		p.syncInBackground(ctx, func(err error) any { return leaderSynced{gen: gen, offset: offset, err: err} })
		return
	}
	st := p.state
	p.role = replica.Leader
	p.leader = replication.NewLeader(replication.LeaderConfig{
		ReplicaID:       p.cfg.BrokerID,
		Epoch:           st.LeaderEpoch,
		PartitionEpoch:  st.PartitionEpoch,
		Replicas:        st.Replicas,
		ISR:             st.Isr,
		ISREpochs:       st.IsrEpochs,
		MinISR:          p.cfg.Topic.MinISR,
		LagTimeMax:      p.cfg.Broker.ReplicaLagTimeMax,
		HighWatermark:   hw,
		ProposalBackoff: proposalBackoff,
	}, p.log.LogEndOffset(), time.Now())
	p.cfg.Logger.Info("leading partition", "partition", p.cfg.TP, "epoch", st.LeaderEpoch,
		"leo", p.log.LogEndOffset(), "hw", p.leader.HighWatermark(), "isr", st.Isr)
	p.onHWAdvanced(ctx)
}

// leaderSynced reports the sync a leadership waits for before it starts.
type leaderSynced struct {
	gen    uint64
	offset int64
	err    error
}

// onLeaderSynced starts the leadership the sync was for, unless the role
// changed meanwhile.
func (p *partitionActor) onLeaderSynced(ctx actor.Context, msg leaderSynced) {
	if msg.gen != p.gen || p.role != replica.NoRole || p.log == nil {
		return
	}
	if msg.err != nil {
		p.failLog(ctx, fmt.Errorf("fsync: %w", msg.err))
		return
	}
	p.answerAll(ctx, p.acks.Synced(msg.offset))
	p.becomeLeader(ctx)
	p.publishStatus()
}

// becomeNone leaves any role: the partition is offline or unusable here.
func (p *partitionActor) becomeNone(ctx actor.Context) {
	hw := p.currentHW()
	p.stepDown(ctx, "partition offline")
	p.checkpointedHW = hw
}

// stepDown ends the current role: everything waiting on it is answered
// with NOT_LEADER, and answers to its outstanding requests are ignored.
func (p *partitionActor) stepDown(ctx actor.Context, why string) {
	if p.role == replica.Follower {
		p.checkpointedHW = p.follower.HighWatermark()
	}
	if p.role == replica.Leader {
		p.checkpointedHW = p.leader.HighWatermark()
	}
	p.gen = nextGen()
	p.role, p.leader, p.follower = replica.NoRole, nil, nil
	for _, pp := range p.pending {
		p.respondProduce(ctx, pp.sender, pp.req, messages.ErrorCode_NOT_LEADER, why)
	}
	p.pending = nil
	p.answerAll(ctx, p.acks.Abandon(messages.ErrorCode_NOT_LEADER, why+" before the batch was replicated"))
	p.syncing = false
	for id, f := range p.parked {
		f.timer.Stop()
		actors.SendTo(ctx, f.sender, p.fetchError(f.req, messages.ErrorCode_NOT_LEADER, why))
		delete(p.parked, id)
	}
	p.releaseReplicaFetches(ctx, messages.ErrorCode_NOT_LEADER, why)
}

// unavailable returns the error every client request gets when this replica
// cannot serve as leader.
func (p *partitionActor) unavailable() (messages.ErrorCode, string) {
	switch {
	case p.openErr != nil:
		return messages.ErrorCode_STORAGE_ERROR, p.openErr.Error()
	case p.log == nil:
		return messages.ErrorCode_STORAGE_ERROR, "log closed"
	case p.role != replica.Leader:
		return messages.ErrorCode_NOT_LEADER, fmt.Sprintf("broker %d does not lead %s", p.cfg.BrokerID, p.cfg.TP)
	}
	return messages.ErrorCode_NONE, ""
}

// ---- housekeeping ---------------------------------------------------------

func (p *partitionActor) onTick(ctx actor.Context) {
	if p.log == nil {
		p.unusable(ctx)
		return
	}
	if p.lostTo > 0 {
		p.checkLostRecords(ctx)
	}
	now := time.Now()
	p.answerAll(ctx, p.acks.Expired(now))
	if p.role == replica.Leader {
		if isr := p.leader.Tick(now); isr != nil {
			p.proposeISR(ctx, isr)
		}
	}
	if now.Sub(p.lastExpiry) >= time.Minute {
		p.lastExpiry = now
		p.producers.Expire(now)
	}
	p.writeFiles(ctx, now)
	p.retick()
	// Last: retention runs beside the actor, which leaves the log alone
	// until it ends.
	if now.Sub(p.lastRetention) >= p.cfg.Broker.RetentionCheckInterval {
		p.lastRetention = now
		p.applyRetention(ctx, now)
	}
}

// producerSnapshotInterval is how often a leader records its producer state.
const producerSnapshotInterval = 30 * time.Second

// applyRetention deletes, beside the actor, what the topic's retention
// says is old, never at or above the HW.
func (p *partitionActor) applyRetention(ctx actor.Context, now time.Time) {
	if p.role == replica.NoRole {
		return
	}
	l, before, hw := p.log, p.log.LogStartOffset(), p.currentHW()
	maxBytes, maxAge := p.cfg.Topic.RetentionBytes, time.Duration(p.cfg.Topic.RetentionMs)*time.Millisecond
	var start int64
	p.besideLog(ctx, func() (err error) {
		start, err = l.ApplyRetention(now, maxBytes, maxAge, hw)
		return err
	}, func(ctx actor.Context, err error) {
		if err != nil {
			p.cfg.Logger.Error("retention failed", "partition", p.cfg.TP, "error", err)
			return
		}
		if start != before {
			p.cfg.Logger.Info("retention deleted old data", "partition", p.cfg.TP, "log_start_offset", start)
			p.publishStatus()
		}
	})
}

// filesWritten reports the small files written beside the actor: the
// HW and the producer state snapshot offset they hold (-1: not written).
type filesWritten struct {
	of         chan struct{}
	hw         int64
	snapshotAt int64
}

// writeFiles writes, beside the actor, the HW checkpoint when it is due
// and moved, and the producer state snapshot when it is due and the log
// is on disk up to its end (a snapshot is trusted only while the log
// holds what it reflects). One write runs at a time; disk work waits for
// it (besideLog). Neither is fsync'd: the log is the source of truth, a
// lost checkpoint only lets a restarted replica expose less at first, a
// lost snapshot costs a longer replay.
func (p *partitionActor) writeFiles(ctx actor.Context, now time.Time) {
	if p.writing != nil {
		return // the last ones still run: the next tick tries again
	}
	hw, snapshotAt := int64(-1), int64(-1)
	if now.Sub(p.lastCheckpoint) >= p.cfg.Broker.HWCheckpointInterval {
		p.lastCheckpoint = now
		if h := p.currentHW(); h >= 0 && h != p.writtenHW {
			hw = h
		}
	}
	var snapshot []byte
	if durable := p.acks.Durable(); p.role == replica.Leader && durable == p.log.LogEndOffset() && durable != p.snapshotAt &&
		now.Sub(p.lastSnapshot) >= producerSnapshotInterval {
		p.lastSnapshot = now
		snapshotAt, snapshot = durable, producerstate.EncodeSnapshot(durable, p.producers.Snapshot())
	}
	if hw < 0 && snapshot == nil {
		return
	}
	p.writing = make(chan struct{})
	written := filesWritten{of: p.writing, hw: -1, snapshotAt: -1}
	self, root, cfg := ctx.Self(), ctx.ActorSystem().Root, p.cfg
	go func() {
		if hw >= 0 && writeCheckpoint(cfg, hw) {
			written.hw = hw
		}
		if snapshot != nil && writeProducerSnapshot(cfg, snapshotAt, snapshot) {
			written.snapshotAt = snapshotAt
		}
		close(written.of)
		root.Send(self, written)
	}()
}

// writeCheckpoint writes hw into the replica's HW checkpoint and reports
// whether it did. It runs beside the actor.
func writeCheckpoint(cfg Config, hw int64) bool {
	if err := storage.WriteCheckpointNoSync(replicadir.Dir(cfg.Dir).Checkpoint(), hw); err != nil {
		cfg.Logger.Warn("writing high-watermark checkpoint", "partition", cfg.TP, "error", err)
		return false
	}
	return true
}

// onFilesWritten records what writeFiles wrote, unless disk work or a
// stop took over its files meanwhile.
func (p *partitionActor) onFilesWritten(msg filesWritten) {
	if msg.of != p.writing {
		return
	}
	p.writing = nil
	if msg.hw >= 0 {
		p.writtenHW = msg.hw
	}
	if msg.snapshotAt >= 0 {
		p.snapshotAt = msg.snapshotAt
	}
}

// publishStatus refreshes the state DescribeReplicas reports.
func (p *partitionActor) publishStatus() {
	st := &messages.ReplicaState{Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition, BrokerId: p.cfg.BrokerID,
		LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1}
	if p.state != nil {
		st.LeaderEpoch = p.state.LeaderEpoch
	}
	if p.log != nil {
		st.LogStartOffset, st.LogEndOffset, st.SizeBytes = p.log.LogStartOffset(), p.log.LogEndOffset(), p.log.Size()
	}
	st.Leader = p.role == replica.Leader
	st.HighWatermark = p.currentHW()
	st.Producers = int32(p.producers.Len())
	if code, msg := p.unavailable(); code == messages.ErrorCode_STORAGE_ERROR {
		st.Error, st.ErrorMessage = code, msg
	}
	p.cfg.Status.Store(st)
}
