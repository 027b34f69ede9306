package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/controller"
	"github.com/sluicemq/sluice/actors/coordinator"
	"github.com/sluicemq/sluice/actors/election"
	"github.com/sluicemq/sluice/actors/partition"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/logspace"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/transport"
)

// Internal messages of the broker actor.
type (
	metadataUpdated  struct{ snap *cluster.Snapshot }
	brokersUpdated   struct{ brokers []cluster.Broker }
	becameController struct {
		lead *cluster.Leadership
	}
	lostController struct{}
)

// replica is the broker's handle on one local partition replica actor.
type replica struct {
	pid       *actor.PID
	topicID   string
	dir       string
	status    *atomic.Pointer[messages.ReplicaState]
	fetched   *atomic.Int64 // records sent to consumers, see partition.Config
	lastState *messages.PartitionState
	// configs is the topic configuration the replica was last sent.
	configs map[string]string
}

// brokerActor routes client requests to partition actors, keeps the
// partition actors in line with the metadata, and hosts the controller
// when this broker holds the controller lock.
type brokerActor struct {
	cfg         *actors.BrokerConfig
	autoCreates autoCreateLimit
	// refusals spaces the log lines of refused requests.
	refusals logspace.Every
	backend  cluster.Backend
	addr     string

	initial *cluster.Snapshot
	meta    *cluster.Snapshot
	// topicDefaults is the configuration of topics that set nothing else:
	// the flags' under the dynamic log.* settings of the metadata.
	topicDefaults actors.TopicConfig
	live          map[int32]cluster.Broker
	replicas      map[cluster.TopicPartition]*replica
	// removing are the replicas whose actor is stopping or whose files
	// are being deleted.
	removing   map[cluster.TopicPartition]*removal
	controller *actor.PID
	lead       *cluster.Leadership // the leadership controller runs under
	cancel     context.CancelFunc
	cleaned    bool
	stopping   bool
	// foreign is set while the store's snapshots carry another cluster id
	// than this broker's data directory; lastForeignLog spaces the errors.
	foreign        bool
	lastForeignLog time.Time
	// missing are the partitions held here that the metadata lacks without
	// a recorded deletion (logged once each).
	missing map[cluster.TopicPartition]bool
	// groupHosts are the group hosts of the offsets partitions led here.
	groupHosts map[int32]*groupHostRef
	// shared outlives a restart of this actor.
	shared *brokerShared
	// pendingController is a leadership won while the previous controller
	// actor is still stopping: its successor is spawned once it is gone.
	pendingController *cluster.Leadership
	// pids is this broker's block of producer ids.
	pids producerIDs
	// authz answers ACL questions from the latest metadata (TLS only).
	authz *authorizer
	// reach keeps the peers' answers to pings, pingGen names this
	// incarnation's ping schedule, fenced are the live brokers the
	// controller is told are not, and gate tells the campaign goroutine
	// whether this broker may be the controller (reach.go).
	reach   *election.Reach
	pingGen uint64
	fenced  []int32
	gate    *leadGate
}

// brokerShared is what every incarnation of one broker's actor shares.
type brokerShared struct {
	// published is the latest metadata, for child actors to read and for a
	// restarted broker actor to start from.
	published atomic.Pointer[cluster.Snapshot]
	// failed are the partition logs that failed in this process.
	failed *partition.FailedLogs
	// pidsEnd is the end of the last producer-id block this broker was
	// given, recorded in its data directory: no id below it is handed out
	// again, even by a controller whose store went back.
	pidsEnd atomic.Int64
}

// NewBrokerProps returns the props of the broker actor. Spawn it named
// transport.BrokerActorName on a system whose address is addr; initial is
// the metadata it starts from (nil: wait for the first watch result).
//
// A failure of the broker actor restarts it (its children are stopped and
// started again from the latest metadata), with the same backoff as its
// children.
func NewProps(cfg *actors.BrokerConfig, backend cluster.Backend, addr string, initial *cluster.Snapshot) *actor.Props {
	shared := &brokerShared{failed: partition.NewFailedLogs()}
	shared.pidsEnd.Store(cfg.ProducerIDsEnd)
	return actor.PropsFromProducer(func() actor.Actor {
		start := initial
		if latest := shared.published.Load(); latest != nil {
			start = latest
		}
		return &brokerActor{cfg: cfg, backend: backend, addr: addr, initial: start, shared: shared, topicDefaults: cfg.DefaultTopic,
			live: map[int32]cluster.Broker{}, replicas: map[cluster.TopicPartition]*replica{},
			removing:   map[cluster.TopicPartition]*removal{},
			groupHosts: map[int32]*groupHostRef{}, missing: map[cluster.TopicPartition]bool{}}
	}, actor.WithSupervisor(partitionSupervisor()), actor.WithGuardian(partitionSupervisor()))
}

// partitionSupervisor restarts a failed child alone, waiting longer after
// each failure within the window.
func partitionSupervisor() actor.SupervisorStrategy {
	return actor.NewExponentialBackoffStrategy(30*time.Second, 200*time.Millisecond)
}

func (b *brokerActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(proto.Message); ok {
		b.cfg.Metrics.Request(string(m.ProtoReflect().Descriptor().Name()))
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		b.onStarted(ctx)
	case *actor.Stopping:
		// Children spawned from now on would never be stopped; spawn none.
		b.stopping = true
		if b.cancel != nil {
			b.cancel()
		}
	case *actor.Restarting:
		// The next incarnation starts its own watches and campaign.
		b.stopping = true
		if b.cancel != nil {
			b.cancel()
		}
	case *actor.Terminated:
		b.onChildTerminated(ctx, msg.Who)
	case *respawnReplica:
		b.onRespawnReplica(ctx, msg.tp)
	case *replicaRemoved:
		b.onReplicaRemoved(ctx, msg)
	case *deletedDirs:
		b.onDeletedDirs(ctx, msg)
	case *producerIDsRecorded:
		b.onProducerIDsRecorded(ctx, msg)
	case *metadataUpdated:
		b.onMetadata(ctx, msg.snap)
	case partition.Started:
		b.onReplicaStarted(ctx, msg.TP)
	case controller.Started:
		b.onControllerStarted(ctx)
	case *brokersUpdated:
		b.onBrokers(ctx, msg.brokers)
	case *becameController:
		b.onBecameController(ctx, msg.lead)
	case *lostController:
		b.onLostController(ctx)
	case *leaderAndIsrChecked:
		b.onLeaderAndIsrChecked(ctx, msg)
	case pingTick:
		b.onPingTick(ctx, msg)
	case *messages.CreateTopicsResponse:
		// The controller's answer to an auto-creation or to
		// ensureOffsetsTopic; clients retry. A topic not created is asked
		// for again at the next retry.
		for _, r := range msg.Results {
			if r.Error != messages.ErrorCode_NONE && r.Error != messages.ErrorCode_TOPIC_ALREADY_EXISTS {
				b.autoCreates.forget(r.Name)
			}
		}
	default:
		// Requests: the table in requests.go, else a group's.
		if b.handle(ctx, msg) {
			return
		}
		if group, ok := coordinator.GroupOf(msg); ok {
			if !b.permitGroup(ctx, group) {
				return
			}
			if req, ok := msg.(*messages.OffsetFetchRequest); ok && b.checked(ctx) != "" {
				b.fetchOffsetsVisible(ctx, group, req)
				return
			}
			b.routeGroup(ctx, group)
		} else {
			actors.Unhandled(ctx)
		}
	}
}

// onStarted starts the goroutines that watch the cluster backend; they
// report back to this actor as messages.
func (b *brokerActor) onStarted(ctx actor.Context) {
	if b.initial != nil {
		b.live[b.cfg.ID] = cluster.Broker{ID: b.cfg.ID, Addr: b.addr, Epoch: b.cfg.BrokerEpoch, Dir: b.cfg.DirectoryID, Version: b.cfg.Version, KafkaAddr: b.cfg.KafkaAddr, Rack: b.cfg.Rack}
		b.onMetadata(ctx, b.initial)
	}
	wctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	self, root := ctx.Self(), ctx.ActorSystem().Root
	var index uint64
	if b.meta != nil {
		index = b.meta.Index
	}
	go watchMetadata(wctx, b.backend, func(s *cluster.Snapshot) { root.Send(self, &metadataUpdated{s}) }, b.cfg, index)
	go watchBrokers(wctx, b.backend, func(bs []cluster.Broker) { root.Send(self, &brokersUpdated{bs}) }, b.cfg)
	b.gate = newLeadGate()
	b.startPings(ctx)
	go campaign(wctx, b.backend, b.cfg.ID, root, self, b.cfg, b.gate)
	b.publishMetrics()
}

func watchMetadata(ctx context.Context, store cluster.MetadataStore, deliver func(*cluster.Snapshot), cfg *actors.BrokerConfig, index uint64) {
	var failing failureLog
	for ctx.Err() == nil {
		snap, err := store.Watch(ctx, index)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, cluster.ErrClosed) {
				failing.failed(cfg, "metadata watch", err)
				sleepCtx(ctx, time.Second)
			}
			if errors.Is(err, cluster.ErrClosed) {
				return
			}
			continue
		}
		failing.ok(cfg, "metadata watch")
		if snap.Index > index {
			index = snap.Index
			deliver(snap)
		}
	}
}

func watchBrokers(ctx context.Context, m cluster.Membership, deliver func([]cluster.Broker), cfg *actors.BrokerConfig) {
	var index uint64
	var failing failureLog
	for ctx.Err() == nil {
		brokers, next, err := m.WatchBrokers(ctx, index)
		if err != nil {
			if ctx.Err() == nil {
				failing.failed(cfg, "broker watch", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		failing.ok(cfg, "broker watch")
		if next != index {
			index = next
			deliver(brokers)
		}
	}
}

// campaign keeps trying to become controller; while it is, the broker
// actor hosts the controller actor. While the gate says this broker hears
// too few of the others it does not campaign, and told to step down it
// gives the lock up.
func campaign(ctx context.Context, lock cluster.ControllerLock, id int32, root *actor.RootContext, broker *actor.PID, cfg *actors.BrokerConfig, gate *leadGate) {
	for ctx.Err() == nil {
		if !gate.may.Load() {
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		lead, err := lock.Campaign(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("controller campaign failed", "error", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		select {
		case <-gate.stepDown: // from before this leadership
		default:
		}
		if !gate.may.Load() {
			_ = lock.Resign(context.Background()) // won while cut off
			continue
		}
		root.Send(broker, &becameController{lead: lead})
		select {
		case <-lead.Lost:
			root.Send(broker, &lostController{})
		case <-gate.stepDown:
			cfg.Logger.Warn("giving up the controller's lock: this broker hears fewer than half of the live brokers")
			_ = lock.Resign(context.Background())
			root.Send(broker, &lostController{})
		case <-ctx.Done():
			_ = lock.Resign(context.Background())
			return
		}
	}
}

// failureLog logs a retry loop's failures once when they start and once
// when they end, not at every attempt.
type failureLog struct{ since time.Time }

func (f *failureLog) failed(cfg *actors.BrokerConfig, what string, err error) {
	cfg.Metrics.MetadataStoreError(what)
	if f.since.IsZero() {
		f.since = time.Now()
		cfg.Logger.Warn(what+" failed; retrying every second", "error", err)
	}
}

func (f *failureLog) ok(cfg *actors.BrokerConfig, what string) {
	if !f.since.IsZero() {
		cfg.Logger.Info(what+" works again", "after", time.Since(f.since).Round(time.Millisecond))
		f.since = time.Time{}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (b *brokerActor) onBecameController(ctx actor.Context, lead *cluster.Leadership) {
	if b.stopping {
		return
	}
	if b.controller != nil {
		// Its name is taken until it has stopped; onChildTerminated goes on.
		ctx.Stop(b.controller)
		b.pendingController = lead
		return
	}
	b.spawnController(ctx, lead)
}

// spawnController starts the controller actor for a won leadership.
func (b *brokerActor) spawnController(ctx actor.Context, lead *cluster.Leadership) {
	b.pendingController = nil
	b.renewSessions()
	props := controller.Props(b.cfg, b.backend, lead)
	b.lead = lead
	pid, err := ctx.SpawnNamed(props, "controller")
	if err != nil {
		b.cfg.Logger.Error("cannot start controller", "error", err)
		return
	}
	b.controller = pid
	b.cfg.Logger.Info("this broker is the controller", "epoch", lead.Epoch)
	b.publishMetrics()
}

// onControllerStarted hands the controller, new or restarted in place
// after a failure, the live brokers and the metadata.
func (b *brokerActor) onControllerStarted(ctx actor.Context) {
	if b.controller == nil || !b.controller.Equal(ctx.Sender()) {
		return
	}
	ctx.Send(b.controller, &controller.BrokersUpdated{Brokers: b.controllerLive()})
	if b.meta != nil {
		ctx.Send(b.controller, &controller.MetadataUpdated{Snap: b.meta})
	}
}

func (b *brokerActor) onLostController(ctx actor.Context) {
	b.pendingController = nil
	if b.controller != nil {
		ctx.Poison(b.controller)
		b.controller = nil
		b.cfg.Logger.Info("this broker is no longer the controller")
	}
	b.publishMetrics()
}

func (b *brokerActor) onBrokers(ctx actor.Context, brokers []cluster.Broker) {
	b.live = make(map[int32]cluster.Broker, len(brokers))
	for _, br := range brokers {
		b.live[br.ID] = br
	}
	if b.reach != nil {
		b.reach.Live(b.liveIDs(), time.Now())
		b.fenced = slices.DeleteFunc(b.fenced, func(id int32) bool { _, ok := b.live[id]; return !ok })
	}
	if b.controller != nil {
		ctx.Send(b.controller, &controller.BrokersUpdated{Brokers: b.controllerLive()})
	}
	b.publishMetrics()
	// Followers need their leader's address, which may have just appeared.
	for tp, r := range b.replicas {
		if r.lastState != nil {
			b.sendState(ctx, tp, r)
		}
	}
}

// sendState hands a replica its state with the leader's current address.
func (b *brokerActor) sendState(ctx actor.Context, tp cluster.TopicPartition, r *replica) {
	addr := ""
	if br, ok := b.live[r.lastState.Leader]; ok {
		addr = br.Addr
	}
	if t := b.meta.Topics[tp.Topic]; t != nil {
		r.configs = t.Configs
	}
	ctx.Send(r.pid, &partition.ApplyState{State: r.lastState, Topic: b.topicConfig(tp.Topic), LeaderAddr: addr})
	if tp.Topic == actors.OffsetsTopic {
		b.syncGroupHost(ctx, tp, r.lastState)
	}
}

// newerState reports whether a is a later state of the same partition than b.
func newerState(a, b *messages.PartitionState) bool {
	if b == nil {
		return true
	}
	if a.TopicId != b.TopicId {
		return true
	}
	return a.LeaderEpoch > b.LeaderEpoch || (a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch > b.PartitionEpoch)
}

// leaderAndIsrChecked carries a LeaderAndIsr from a controller epoch newer
// than this broker's metadata shows, with the store's answer about who the
// controller is.
type leaderAndIsrChecked struct {
	req       *messages.LeaderAndIsrRequest
	sender    *actor.PID
	principal string
	ctl       cluster.Controller
	err       error
}

// onLeaderAndIsr applies states the controller pushed, ahead of the
// metadata watch. From another process it is accepted only from the
// controller the metadata store names, at the store's controller epoch,
// sent from that broker's registered address: an older epoch is
// STALE_CONTROLLER_EPOCH, anything else CLUSTER_AUTHORIZATION_FAILED. A
// newer epoch than this broker has seen is checked against the store
// first, off this actor.
func (b *brokerActor) onLeaderAndIsr(ctx actor.Context, req *messages.LeaderAndIsrRequest) {
	if !transport.FromNetwork(ctx) {
		b.applyLeaderAndIsr(ctx, req) // from this broker's own controller actor
		actors.Respond(ctx, &messages.LeaderAndIsrResponse{})
		return
	}
	var known cluster.Controller
	if b.meta != nil {
		known = b.meta.Controller
	}
	if req.ControllerEpoch > known.Epoch {
		sender, self, root, backend := ctx.Sender(), ctx.Self(), ctx.ActorSystem().Root, b.backend
		principal := transport.Principal(ctx)
		go func() {
			qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			id, epoch, ok, err := backend.Controller(qctx)
			ctl := cluster.Controller{ID: -1}
			if ok {
				ctl = cluster.Controller{ID: id, Epoch: epoch}
			}
			root.Send(self, &leaderAndIsrChecked{req: req, sender: sender, principal: principal, ctl: ctl, err: err})
		}()
		return
	}
	actors.SendTo(ctx, ctx.Sender(), b.checkLeaderAndIsr(ctx, req, ctx.Sender(), transport.Principal(ctx), known))
}

func (b *brokerActor) onLeaderAndIsrChecked(ctx actor.Context, msg *leaderAndIsrChecked) {
	if msg.err != nil {
		actors.SendTo(ctx, msg.sender, &messages.LeaderAndIsrResponse{Error: messages.ErrorCode_NOT_CONTROLLER,
			ErrorMessage: "cannot check the controller epoch with the metadata store: " + msg.err.Error()})
		return
	}
	actors.SendTo(ctx, msg.sender, b.checkLeaderAndIsr(ctx, msg.req, msg.sender, msg.principal, msg.ctl))
}

// checkLeaderAndIsr applies req if it comes from the controller ctl, and
// returns the answer.
func (b *brokerActor) checkLeaderAndIsr(ctx actor.Context, req *messages.LeaderAndIsrRequest, sender *actor.PID, principal string, ctl cluster.Controller) *messages.LeaderAndIsrResponse {
	switch {
	case req.ControllerEpoch < ctl.Epoch:
		return &messages.LeaderAndIsrResponse{Error: messages.ErrorCode_STALE_CONTROLLER_EPOCH,
			ErrorMessage: fmt.Sprintf("controller epoch %d, the current controller's is %d", req.ControllerEpoch, ctl.Epoch)}
	case req.ControllerEpoch != ctl.Epoch || req.ControllerId != ctl.ID:
		return b.refuseControl(sender, "LeaderAndIsr", fmt.Sprintf("from controller %d at epoch %d; the metadata store names controller %d at epoch %d",
			req.ControllerId, req.ControllerEpoch, ctl.ID, ctl.Epoch))
	case !b.sentByBroker(sender, req.ControllerId):
		return b.refuseControl(sender, "LeaderAndIsr", fmt.Sprintf("not sent from controller %d's address", req.ControllerId))
	case b.cfg.Secure && principal != transport.BrokerPrincipal(req.ControllerId):
		return b.refuseControl(sender, "LeaderAndIsr", fmt.Sprintf("sent by %s, not by controller %s", principal, transport.BrokerPrincipal(req.ControllerId)))
	}
	b.applyLeaderAndIsr(ctx, req)
	return &messages.LeaderAndIsrResponse{}
}

func (b *brokerActor) refuseControl(sender *actor.PID, what, why string) *messages.LeaderAndIsrResponse {
	b.cfg.Logger.Warn("refused a control message", "message", what, "sender", sender, "reason", why)
	return &messages.LeaderAndIsrResponse{Error: messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED, ErrorMessage: why}
}

// applyLeaderAndIsr hands each newer state to its local replica.
func (b *brokerActor) applyLeaderAndIsr(ctx actor.Context, req *messages.LeaderAndIsrRequest) {
	for _, st := range req.States {
		tp := cluster.TopicPartition{Topic: st.Topic, Partition: st.Partition}
		r := b.replicas[tp]
		if r == nil || r.topicID != st.TopicId || !newerState(st, r.lastState) || !slices.Contains(st.Replicas, b.cfg.ID) {
			continue // unknown here yet (the watch will bring it) or not newer
		}
		r.lastState = st
		b.sendState(ctx, tp, r)
	}
}

// sentByBroker reports whether sender is an actor at the registered
// address of live broker id. Until connections are authenticated this is
// what ties a control or replication message to the broker it names.
func (b *brokerActor) sentByBroker(sender *actor.PID, id int32) bool {
	br, ok := b.live[id]
	return ok && sender != nil && sender.Address == br.Addr
}

// fromFollower admits a replication request from the network only from the
// registered address of the broker it names; it answers the refusal.
func (b *brokerActor) fromFollower(ctx actor.Context, replica int32, fail func(messages.ErrorCode, string) proto.Message) bool {
	if from, known := b.fromBroker(ctx, replica); known && !from {
		// With TLS the connection says who it is: only broker N fetches as N.
		why := fmt.Sprintf("replication request for broker %d from %s", replica, transport.Principal(ctx))
		b.cfg.Logger.Warn("refused a replication request", "sender", ctx.Sender(), "peer", ctx.MessageHeader().Get(transport.PeerHeader), "reason", why)
		actors.Respond(ctx, fail(messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED, why))
		return false
	}
	if !transport.FromNetwork(ctx) || b.sentByBroker(ctx.Sender(), replica) {
		return true
	}
	if _, known := b.live[replica]; !known {
		// Not seen alive yet (this broker has just started, or it has):
		// the follower asks again.
		actors.Respond(ctx, fail(messages.ErrorCode_BROKER_NOT_AVAILABLE, fmt.Sprintf("broker %d is not known alive here yet", replica)))
		return false
	}
	why := fmt.Sprintf("replication request for broker %d, not sent from its registered address", replica)
	b.cfg.Logger.Warn("refused a replication request", "sender", ctx.Sender(), "peer", ctx.MessageHeader().Get(transport.PeerHeader), "reason", why)
	actors.Respond(ctx, fail(messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED, why))
	return false
}

// fromOwnPartition admits a request a broker only takes from its own
// partition actors (ISR proposals, offline reports) before forwarding it to
// the controller.
func (b *brokerActor) fromOwnPartition(ctx actor.Context, broker int32, fail func(messages.ErrorCode, string) proto.Message) bool {
	if !transport.FromNetwork(ctx) && broker == b.cfg.ID {
		return true
	}
	why := fmt.Sprintf("a broker takes %T only from its own partitions", ctx.Message())
	b.cfg.Logger.Warn("refused a control message", "sender", ctx.Sender(), "peer", ctx.MessageHeader().Get(transport.PeerHeader), "reason", why)
	actors.Respond(ctx, fail(messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED, why))
	return false
}

func (b *brokerActor) liveList() []cluster.Broker {
	out := make([]cluster.Broker, 0, len(b.live))
	for _, br := range b.live {
		out = append(out, br)
	}
	slices.SortFunc(out, func(x, y cluster.Broker) int { return int(x.ID - y.ID) })
	return out
}

// ---- request routing ------------------------------------------------------

// route forwards a partition request to its local replica actor, keeping
// the sender, or answers with the error fail builds.
func (b *brokerActor) route(ctx actor.Context, topic string, partition int32, fail func(messages.ErrorCode, string) proto.Message) {
	tp := cluster.TopicPartition{Topic: topic, Partition: partition}
	if r := b.replicas[tp]; r != nil {
		ctx.Forward(r.pid)
		return
	}
	if b.meta != nil {
		if t, ok := b.meta.Topics[topic]; ok && partition >= 0 && partition < t.Partitions {
			actors.Respond(ctx, fail(messages.ErrorCode_NOT_LEADER, fmt.Sprintf("broker %d holds no replica of %s", b.cfg.ID, tp)))
			return
		}
	}
	actors.Respond(ctx, fail(messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("%s does not exist", tp)))
}

// forwardToController forwards the current request to the controller,
// keeping the sender, or answers NOT_CONTROLLER. It never waits for the
// metadata store: the controller is known from the metadata.
func (b *brokerActor) forwardToController(ctx actor.Context, fail func(messages.ErrorCode, string) proto.Message) {
	pid, why := b.controllerPID()
	if pid == nil {
		actors.Respond(ctx, fail(messages.ErrorCode_NOT_CONTROLLER, why))
		return
	}
	ctx.Forward(pid)
}

// controllerPID is the controller actor's PID, or why there is none.
func (b *brokerActor) controllerPID() (*actor.PID, string) {
	if b.controller != nil {
		return b.controller, ""
	}
	id := b.controllerID()
	switch {
	case id < 0:
		return nil, "no controller is elected right now"
	case id == b.cfg.ID:
		// The lock is won but the controller actor not started yet.
		return nil, "the controller is starting"
	}
	br, live := b.live[id]
	if !live {
		return nil, fmt.Sprintf("controller %d is not reachable", id)
	}
	return transport.ControllerPID(br.Addr), ""
}

// controllerID is the controller's broker id as the metadata shows it (-1:
// none known).
func (b *brokerActor) controllerID() int32 {
	if b.controller != nil {
		return b.cfg.ID
	}
	if b.meta == nil {
		return -1
	}
	return b.meta.Controller.ID
}

func (b *brokerActor) onMetadataRequest(ctx actor.Context, req *messages.MetadataRequest) {
	resp := &messages.MetadataResponse{ControllerId: b.controllerID(), MetadataStore: b.cfg.MetadataStore}
	for _, br := range b.liveList() {
		resp.Brokers = append(resp.Brokers, &messages.BrokerInfo{Id: br.ID, Address: br.Addr, Version: br.Version, KafkaAddress: br.KafkaAddr, Rack: br.Rack})
	}
	if b.meta == nil {
		for _, name := range req.Topics {
			resp.Topics = append(resp.Topics, &messages.TopicMetadata{Name: name, Error: messages.ErrorCode_LEADER_NOT_AVAILABLE, ErrorMessage: "broker is starting"})
		}
		actors.Respond(ctx, resp)
		return
	}
	resp.ClusterId = b.meta.ClusterID
	names := req.Topics
	if len(names) == 0 {
		for name := range b.meta.Topics {
			names = append(names, name)
		}
		slices.Sort(names)
	}
	now, asked := time.Now(), 0
	for _, name := range names {
		if why := b.may(ctx, onTopic(opDescribe, name)); why != "" {
			// Listed only when asked for by name, as Kafka: the principal
			// learns nothing of topics it may not describe.
			if len(req.Topics) > 0 {
				resp.Topics = append(resp.Topics, &messages.TopicMetadata{Name: name, Error: messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED, ErrorMessage: why})
			}
			continue
		}
		t, ok := b.meta.Topics[name]
		if !ok {
			tm := &messages.TopicMetadata{Name: name, Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, ErrorMessage: fmt.Sprintf("topic %q does not exist", name)}
			if req.AllowAutoTopicCreation && b.dynamicConfigs().Bool(brokerconfig.AutoCreateTopics, b.cfg.AutoCreateTopics) && b.mayCreate(ctx, name) {
				controller, none := b.controllerPID()
				if controller == nil {
					// Nobody to ask: nothing is recorded as asked for, and
					// the client's retry asks again.
					tm.Error, tm.ErrorMessage = messages.ErrorCode_LEADER_NOT_AVAILABLE, "not created yet: "+none
					resp.Topics = append(resp.Topics, tm)
					continue
				}
				ask, creating := b.autoCreates.allow(name, asked, now)
				if ask {
					// The answer is not awaited: the client retries its
					// metadata request until the topic is there.
					asked++
					ctx.Request(controller, &messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: name}}})
				}
				if creating {
					tm.Error, tm.ErrorMessage = messages.ErrorCode_LEADER_NOT_AVAILABLE, "topic is being created"
				} else {
					tm.ErrorMessage += fmt.Sprintf("; not created now: at most %d topics are created per request and %g a second", autoCreatePerRequest, autoCreateRate)
				}
			}
			resp.Topics = append(resp.Topics, tm)
			continue
		}
		resp.Topics = append(resp.Topics, b.topicMetadata(t))
	}
	actors.Respond(ctx, resp)
}

func (b *brokerActor) topicMetadata(t *messages.TopicRecord) *messages.TopicMetadata {
	tm := &messages.TopicMetadata{Name: t.Name, TopicId: t.TopicId, Configs: t.Configs}
	for _, part := range b.meta.PartitionsOf(t.Name) {
		st := part.State
		pm := &messages.PartitionMetadata{Partition: st.Partition, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
			Replicas: st.Replicas, Isr: st.Isr}
		for _, id := range st.Replicas {
			if _, ok := b.live[id]; !ok {
				pm.OfflineReplicas = append(pm.OfflineReplicas, id)
			}
		}
		if _, ok := b.live[st.Leader]; st.Leader < 0 || !ok {
			pm.Error = messages.ErrorCode_LEADER_NOT_AVAILABLE
		}
		tm.Partitions = append(tm.Partitions, pm)
	}
	return tm
}

// sendToController sends msg to the controller without waiting for an
// answer; the controller's answer, if any, comes back to this actor.
func (b *brokerActor) sendToController(ctx actor.Context, msg proto.Message) {
	if pid, _ := b.controllerPID(); pid != nil {
		ctx.Request(pid, msg)
	}
}

func (b *brokerActor) onDescribeReplicas(ctx actor.Context, req *messages.DescribeReplicasRequest) {
	actors.Respond(ctx, &messages.DescribeReplicasResponse{BrokerId: b.cfg.ID, Replicas: b.replicaStates(ctx, req.Topics)})
}

// onDescribeLogDirs answers with the data directory and the replicas in it.
func (b *brokerActor) onDescribeLogDirs(ctx actor.Context, req *messages.DescribeLogDirsRequest) {
	actors.Respond(ctx, &messages.DescribeLogDirsResponse{LogDir: filepath.Join(b.cfg.DataDir, "topics"), Replicas: b.replicaStates(ctx, req.Topics)})
}

// replicaStates lists the replicas hosted here of topics (all when none),
// of the topics the sender may describe, in partition order.
func (b *brokerActor) replicaStates(ctx actor.Context, topics []string) []*messages.ReplicaState {
	var out []*messages.ReplicaState
	for tp, r := range b.replicas {
		if len(topics) > 0 && !slices.Contains(topics, tp.Topic) || b.may(ctx, onTopic(opDescribe, tp.Topic)) != "" {
			continue
		}
		if st := r.status.Load(); st != nil {
			// A copy: the published state is shared and never changed.
			st = proto.CloneOf(st)
			st.RecordsFetched = r.fetched.Load()
			out = append(out, st)
		} else {
			out = append(out, &messages.ReplicaState{Topic: tp.Topic, Partition: tp.Partition, BrokerId: b.cfg.ID,
				Error: messages.ErrorCode_LEADER_NOT_AVAILABLE, ErrorMessage: "starting", LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1})
		}
	}
	slices.SortFunc(out, func(x, y *messages.ReplicaState) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return int(x.Partition - y.Partition)
	})
	return out
}
