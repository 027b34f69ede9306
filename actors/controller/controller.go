package controller

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/election"
	"github.com/sluicemq/sluice/actors/placement"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/transport"
)

// MaxPartitions caps the partitions of one topic.
const MaxPartitions = 10000

var topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// ValidateTopicName applies Kafka's rules for topic names.
func ValidateTopicName(name string) error {
	switch {
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case !topicNameRE.MatchString(name):
		return fmt.Errorf("topic name %q: use 1 to 249 of [a-zA-Z0-9._-]", name)
	}
	return nil
}

// Started is what the controller tells its broker when it has started, the
// first time or again after a failure: the broker answers with
// BrokersUpdated and MetadataUpdated.
type Started struct{}

// MetadataUpdated hands the controller the metadata the broker watches.
type MetadataUpdated struct{ Snap *cluster.Snapshot }

// BrokersUpdated hands the controller the live brokers.
type BrokersUpdated struct{ Brokers []cluster.Broker }

// retryElections asks the controller to run elections again after a failed
// write. It carries no state: a controller started later under the same
// name must not act on an older one's view.
type retryElections struct{}

// controllerActor owns every metadata write: topic creation and deletion,
// replica placement and (in a cluster) leader election and ISR commits. It
// runs on the broker that holds the controller lock, with the lock's fence.
type controllerActor struct {
	cfg   *actors.BrokerConfig
	store cluster.MetadataStore
	lead  *cluster.Leadership
	live  []cluster.Broker
	// snap is the latest metadata: reloaded after every write, and from the
	// broker's watch.
	snap *cluster.Snapshot
	// liveKnown is set once the first membership list arrived.
	liveKnown bool
	// offline are the replicas that reported they cannot serve, with the
	// broker epoch they reported under: not alive for their partition's
	// elections until their broker restarts or their leader adds them back.
	offline map[cluster.TopicPartition]map[int32]int64
	// busy is set while a store step runs beside the actor (beside.go);
	// inflight is the request it is for (nil: none), deferred the
	// requests that wait for it, electAgain the elections asked for
	// meanwhile.
	busy       bool
	inflight   *actor.MessageEnvelope
	deferred   []*actor.MessageEnvelope
	electAgain bool
	// imbalanceGen names this run's leader-balancing schedule (preferred.go).
	imbalanceGen uint64
}

// Props is what the broker spawns the controller from, once it holds the
// controller's leadership lead.
func Props(cfg *actors.BrokerConfig, store cluster.MetadataStore, lead *cluster.Leadership) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &controllerActor{cfg: cfg, store: store, lead: lead, offline: map[cluster.TopicPartition]map[int32]int64{}}
	})
}

func (c *controllerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.beside(ctx, true, nil) // requests wait for the first snapshot
		if parent := ctx.Parent(); parent != nil {
			ctx.Request(parent, Started{})
		}
		c.scheduleImbalanceCheck(ctx)
	case *actor.Stopping, *actor.Restarting:
		c.answerWaiting(ctx)
	case *storeDone:
		c.onStoreDone(ctx, msg)
	case *BrokersUpdated:
		c.live, c.liveKnown = msg.Brokers, true
		c.electAll(ctx)
	case retryElections:
		c.electAll(ctx)
	case checkImbalance:
		c.onCheckImbalance(ctx, msg)
	case *MetadataUpdated:
		if c.snap == nil || msg.Snap.Index > c.snap.Index {
			c.snap = msg.Snap
			if c.uncleanMayElect() {
				c.electAll(ctx)
			}
		}
	case *messages.ReplicaOfflineRequest:
		if c.admit(ctx, msg.BrokerId) {
			actors.Respond(ctx, c.onReplicaOffline(ctx, msg))
		}
	case *messages.LeaderAndIsrResponse:
		if msg.Error != messages.ErrorCode_NONE {
			c.cfg.Logger.Warn("a broker refused the controller's LeaderAndIsr", "broker", ctx.Sender(), "error", msg.Error, "reason", msg.ErrorMessage)
		}
	default:
		if ch, ok := changes[reflect.TypeOf(msg)]; ok {
			if !c.deferUntilIdle(ctx) {
				ch.serve(c, ctx, msg.(proto.Message))
			}
			return
		}
		actors.Unhandled(ctx)
	}
}

// admit lets a broker-to-controller request through when it comes from
// this process or from the registered address of the broker it names, and
// answers CLUSTER_AUTHORIZATION_FAILED otherwise.
func (c *controllerActor) admit(ctx actor.Context, broker int32) bool {
	why := fmt.Sprintf("%T names broker %d but was not sent from its registered address", ctx.Message(), broker)
	switch p := transport.Principal(ctx); {
	case p == "":
		return true
	case c.cfg.Secure && p != transport.BrokerPrincipal(broker):
		// With TLS the connection says who sent it.
		why = fmt.Sprintf("%T names broker %d but was sent by %s", ctx.Message(), broker, p)
	case c.sentByBroker(ctx.Sender(), broker):
		return true
	}
	c.cfg.Logger.Warn("controller refused a request", "sender", ctx.Sender(), "peer", ctx.MessageHeader().Get(transport.PeerHeader), "reason", why)
	actors.Respond(ctx, &messages.ErrorResponse{Error: messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED, Message: why})
	return false
}

// sentByBroker reports whether sender is an actor at live broker id's
// registered address (any broker's, for id -1).
func (c *controllerActor) sentByBroker(sender *actor.PID, id int32) bool {
	if sender == nil {
		return false
	}
	for _, b := range c.live {
		if (id < 0 || b.ID == id) && b.Addr == sender.Address {
			return true
		}
	}
	return false
}

// trusted returns why the controller must not write, or "": its metadata
// must be its own cluster's (a wiped store is not written to).
func (c *controllerActor) trusted() string {
	switch {
	case c.snap == nil:
		return "the controller has not loaded the metadata yet"
	case c.snap.ClusterID != c.cfg.ClusterID:
		return fmt.Sprintf("the metadata store holds cluster %q, not this cluster %q: it lost its data or is another cluster's", c.snap.ClusterID, c.cfg.ClusterID)
	}
	return ""
}

// creation is a topic a CreateTopics request creates, planned.
type creation struct {
	result int // its index in the response's results
	topic  *messages.TopicRecord
	states []*messages.PartitionState
}

func (c *controllerActor) onCreateTopics(ctx actor.Context, req *messages.CreateTopicsRequest) {
	sender := ctx.Sender()
	resp := &messages.CreateTopicsResponse{}
	var planned []*creation
	for _, spec := range req.Topics {
		code, text := messages.ErrorCode_NONE, ""
		var cr *creation
		switch {
		case c.trusted() != "":
			code, text = messages.ErrorCode_INCONSISTENT_CLUSTER_ID, c.trusted()
		case spec.Name == actors.OffsetsTopic && transport.FromNetwork(ctx) && !c.sentByBroker(ctx.Sender(), -1):
			// Brokers create it on a group's first request.
			code, text = messages.ErrorCode_INVALID_TOPIC, "the internal topic "+actors.OffsetsTopic+" is created by the brokers"
		default:
			cr, code, text = c.planTopic(spec, req.ValidateOnly, planned)
		}
		result := &messages.TopicResult{Name: spec.Name, Error: code, ErrorMessage: text}
		if cr != nil {
			cr.result = len(resp.Results)
			planned = append(planned, cr)
			result.Partitions, result.ReplicationFactor = cr.topic.Partitions, cr.topic.ReplicationFactor
		}
		resp.Results = append(resp.Results, result)
	}
	if len(planned) == 0 {
		actors.SendTo(ctx, sender, resp)
		return
	}
	c.besideFor(ctx, true, func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		errs := make([]error, len(planned))
		for i, cr := range planned {
			sctx, cancel := storeContext()
			errs[i] = store.CreateTopic(sctx, fence, cr.topic, cr.states)
			cancel()
		}
		return func(ctx actor.Context) {
			var created []*messages.PartitionState
			for i, cr := range planned {
				r := resp.Results[cr.result]
				switch err := errs[i]; {
				case errors.Is(err, cluster.ErrTopicExists):
					r.Error, r.ErrorMessage = messages.ErrorCode_TOPIC_ALREADY_EXISTS, fmt.Sprintf("topic %q already exists", r.Name)
				case err != nil:
					r.Error, r.ErrorMessage = c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), err.Error()
				default:
					c.cfg.Logger.Info("created topic", "topic", r.Name, "partitions", cr.topic.Partitions, "replication_factor", cr.topic.ReplicationFactor)
					created = append(created, cr.states...)
				}
			}
			c.announce(ctx, created)
			actors.SendTo(ctx, sender, resp)
		}
	})
}

// dynamicConfigs is the dynamic broker settings in force for the
// controller's broker.
func (c *controllerActor) dynamicConfigs() brokerconfig.Values {
	if c.snap == nil {
		return brokerconfig.For(nil, c.cfg.ID)
	}
	return brokerconfig.For(c.snap.Security, c.cfg.ID)
}

// topicDefaults is the configuration of topics that set nothing else: the
// flags' under the dynamic log.* settings.
func (c *controllerActor) topicDefaults() actors.TopicConfig {
	return actors.TopicDefaults(c.cfg.DefaultTopic, c.dynamicConfigs())
}

// planTopic validates a topic to create and places its partitions (nil
// for a valid one with validateOnly). The partitions of planned, created
// by the same request, count toward the brokers' partition limit.
func (c *controllerActor) planTopic(spec *messages.TopicSpec, validateOnly bool, planned []*creation) (*creation, messages.ErrorCode, string) {
	if err := ValidateTopicName(spec.Name); err != nil {
		return nil, messages.ErrorCode_INVALID_TOPIC, err.Error()
	}
	partitions := int(spec.Partitions)
	dynamic := c.dynamicConfigs()
	if partitions == 0 {
		partitions = dynamic.Int(brokerconfig.NumPartitions, c.cfg.DefaultPartitions)
	}
	if partitions < 1 || partitions > MaxPartitions {
		return nil, messages.ErrorCode_INVALID_PARTITIONS, fmt.Sprintf("partitions %d: want 1 to %d", spec.Partitions, MaxPartitions)
	}
	rf := int(spec.ReplicationFactor)
	if rf == 0 {
		rf = dynamic.Int(brokerconfig.DefaultReplication, c.cfg.DefaultReplicationFactor)
	}
	if rf < 1 {
		return nil, messages.ErrorCode_INVALID_REPLICATION_FACTOR, fmt.Sprintf("replication factor %d: must be >= 1", spec.ReplicationFactor)
	}
	if _, err := actors.ParseTopicConfig(c.topicDefaults(), spec.Configs); err != nil {
		return nil, messages.ErrorCode_INVALID_CONFIG, err.Error()
	}
	if code, why := c.knowsLiveBrokers(); code != messages.ErrorCode_NONE {
		return nil, code, why
	}
	assignment, err := placement.AssignWithRacks(c.liveRacks(), partitions, rf, rand.Int(), rand.Int())
	if err != nil {
		return nil, messages.ErrorCode_INVALID_REPLICATION_FACTOR, err.Error()
	}
	var pending [][]int32
	for _, cr := range planned {
		for _, st := range cr.states {
			pending = append(pending, st.Replicas)
		}
	}
	if why := c.overPartitionLimit(spec.Name, assignment, pending); why != "" {
		return nil, messages.ErrorCode_INVALID_PARTITIONS, why
	}
	if validateOnly {
		return nil, messages.ErrorCode_NONE, ""
	}
	topic := &messages.TopicRecord{
		Name: spec.Name, TopicId: cluster.NewTopicID(), Partitions: int32(partitions),
		ReplicationFactor: int32(rf), Configs: spec.Configs, CreatedUnixMs: time.Now().UnixMilli(),
	}
	return &creation{topic: topic, states: c.newPartitions(topic, assignment)}, messages.ErrorCode_NONE, ""
}

// newPartitions appends partitions placed by assignment to topic and
// returns their initial states: the first replica leads, every replica is
// in sync under the broker epoch and directory it runs with now.
func (c *controllerActor) newPartitions(topic *messages.TopicRecord, assignment [][]int32) []*messages.PartitionState {
	states := make([]*messages.PartitionState, 0, len(assignment))
	for _, replicas := range assignment {
		p := int32(len(topic.Assignment))
		topic.Assignment = append(topic.Assignment, &messages.ReplicaAssignment{Replicas: replicas})
		epochs, dirs := map[int32]int64{}, map[int32]string{}
		for _, id := range replicas {
			if m, ok := c.isLive(id); ok {
				if m.Epoch != 0 {
					epochs[id] = m.Epoch
				}
				if m.Dir != "" {
					dirs[id] = m.Dir
				}
			}
		}
		states = append(states, &messages.PartitionState{
			Topic: topic.Name, Partition: p, TopicId: topic.TopicId,
			Leader: replicas[0], LeaderEpoch: 0, Isr: replicas, PartitionEpoch: 0, Replicas: replicas, IsrEpochs: epochs, IsrDirs: dirs,
		})
	}
	topic.Partitions = int32(len(topic.Assignment))
	return states
}

// overPartitionLimit says why assignment would put more partition
// replicas on a broker than MaxPartitions allows ("" when it does not),
// with pending (replica sets not stored yet) counted as hosted.
// The limit is the controller's setting, applied to every broker (as a
// cluster-wide one: brokers of a cluster run with the same settings).
func (c *controllerActor) overPartitionLimit(topic string, assignment, pending [][]int32) string {
	limit := c.cfg.MaxPartitions
	if limit <= 0 {
		return ""
	}
	hosted := map[int32]int{}
	if c.snap != nil {
		for _, part := range c.snap.Partitions {
			for _, id := range part.State.Replicas {
				hosted[id]++
			}
		}
	}
	for _, replicas := range pending {
		for _, id := range replicas {
			hosted[id]++
		}
	}
	adding := map[int32]int{}
	for _, replicas := range assignment {
		for _, id := range replicas {
			adding[id]++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(adding)) {
		if hosted[id]+adding[id] > limit {
			return fmt.Sprintf("topic %q would put %d partition replicas on broker %d, which hosts %d of at most %d "+
				"(the brokers' --max-partitions, set from their open-files limit and --log-memory-bytes unless given)",
				topic, adding[id], id, hosted[id], limit)
		}
	}
	return ""
}

func (c *controllerActor) onDeleteTopics(ctx actor.Context, req *messages.DeleteTopicsRequest) {
	sender := ctx.Sender()
	resp := &messages.DeleteTopicsResponse{}
	var deleting []*messages.TopicResult
	for _, name := range req.Names {
		r := &messages.TopicResult{Name: name}
		resp.Results = append(resp.Results, r)
		switch why := c.trusted(); {
		case name == actors.OffsetsTopic:
			r.Error, r.ErrorMessage = messages.ErrorCode_INVALID_TOPIC, "the internal topic "+actors.OffsetsTopic+" cannot be deleted"
		case why != "":
			r.Error, r.ErrorMessage = messages.ErrorCode_INCONSISTENT_CLUSTER_ID, why
		default:
			deleting = append(deleting, r)
		}
	}
	if len(deleting) == 0 {
		actors.SendTo(ctx, sender, resp)
		return
	}
	names := make([]string, len(deleting))
	for i, r := range deleting {
		names[i] = r.Name
	}
	c.besideFor(ctx, true, func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		errs := make([]error, len(names))
		for i, name := range names {
			sctx, cancel := storeContext()
			errs[i] = store.DeleteTopic(sctx, fence, name)
			cancel()
		}
		return func(ctx actor.Context) {
			for i, r := range deleting {
				switch err := errs[i]; {
				case errors.Is(err, cluster.ErrTopicNotFound):
					r.Error, r.ErrorMessage = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q does not exist", r.Name)
				case err != nil:
					r.Error, r.ErrorMessage = c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), err.Error()
				default:
					c.cfg.Logger.Info("deleted topic", "topic", r.Name)
				}
			}
			actors.SendTo(ctx, sender, resp)
		}
	})
}

// knowsLiveBrokers refuses, as NOT_CONTROLLER (clients retry it), to
// place replicas before the controller has heard of any live broker: just
// elected, it has not yet had the membership, which includes at least its
// own broker.
func (c *controllerActor) knowsLiveBrokers() (messages.ErrorCode, string) {
	if len(c.live) == 0 {
		return messages.ErrorCode_NOT_CONTROLLER, "the controller has not yet heard which brokers are live; try again"
	}
	return messages.ErrorCode_NONE, ""
}

// canPlace says why the controller cannot decide where replicas go or
// who leads yet (NONE when it can): metadata of another cluster, or no
// membership yet.
func (c *controllerActor) canPlace() (messages.ErrorCode, string) {
	if why := c.trusted(); why != "" {
		return messages.ErrorCode_INCONSISTENT_CLUSTER_ID, why
	}
	return c.knowsLiveBrokers()
}

// liveRacks maps the live brokers to their racks, for placement.
func (c *controllerActor) liveRacks() map[int32]string {
	racks := make(map[int32]string, len(c.live))
	for _, b := range c.live {
		racks[b.ID] = b.Rack
	}
	return racks
}

// isLive tells whether broker id is alive, and as which run.
func (c *controllerActor) isLive(id int32) (election.Member, bool) {
	for _, b := range c.live {
		if b.ID == id {
			return election.Member{Epoch: b.Epoch, Dir: b.Dir}, true
		}
	}
	return election.Member{}, false
}

// liveFor is isLive for the elections of one partition: a replica that
// reported itself offline under its broker's current epoch is not alive.
func (c *controllerActor) liveFor(tp cluster.TopicPartition) election.Live {
	marks := c.offline[tp]
	return func(id int32) (election.Member, bool) {
		m, ok := c.isLive(id)
		if ok && len(marks) > 0 && marks[id] == m.Epoch {
			return election.Member{}, false
		}
		return m, ok
	}
}

// onReplicaOffline takes a replica that cannot serve out of its
// partition's leadership and ISR.
func (c *controllerActor) onReplicaOffline(ctx actor.Context, req *messages.ReplicaOfflineRequest) *messages.ReplicaOfflineResponse {
	if why := c.trusted(); why != "" {
		return &messages.ReplicaOfflineResponse{Error: messages.ErrorCode_INCONSISTENT_CLUSTER_ID, ErrorMessage: why}
	}
	tp := cluster.TopicPartition{Topic: req.Topic, Partition: req.Partition}
	part, ok := c.snap.Partitions[tp]
	if !ok || part.State.TopicId != req.TopicId {
		return &messages.ReplicaOfflineResponse{Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, ErrorMessage: tp.String()}
	}
	if m, alive := c.isLive(req.BrokerId); !alive || m.Epoch != req.BrokerEpoch {
		return &messages.ReplicaOfflineResponse{Error: messages.ErrorCode_STALE_BROKER_EPOCH,
			ErrorMessage: fmt.Sprintf("broker %d reported under epoch %d, its current epoch is %d", req.BrokerId, req.BrokerEpoch, m.Epoch)}
	}
	if c.offline[tp] == nil {
		c.offline[tp] = map[int32]int64{}
	}
	c.offline[tp][req.BrokerId] = req.BrokerEpoch
	c.cfg.Logger.Warn("a replica reported it cannot serve", "partition", tp, "broker", req.BrokerId, "reason", req.Reason)
	c.electAll(ctx)
	return &messages.ReplicaOfflineResponse{}
}

func toElection(st *messages.PartitionState) election.Partition {
	return election.Partition{Replicas: st.Replicas, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
		ISR: st.Isr, PartitionEpoch: st.PartitionEpoch, ISREpochs: st.IsrEpochs, ISRDirs: st.IsrDirs,
		Adding: st.AddingReplicas, Removing: st.RemovingReplicas}
}

func fromElection(st *messages.PartitionState, p election.Partition) *messages.PartitionState {
	next := proto.Clone(st).(*messages.PartitionState)
	next.Leader, next.LeaderEpoch, next.Isr, next.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
	next.IsrEpochs, next.IsrDirs = p.ISREpochs, p.ISRDirs
	next.Replicas, next.AddingReplicas, next.RemovingReplicas = p.Replicas, p.Adding, p.Removing
	if !p.Reassigning() {
		next.ReassignmentThrottle = 0 // a move's throttle ends with it
	}
	return next
}

// uncleanMayElect reports whether a partition without a leader may have
// one out of sync: unclean election is allowed for its topic, or as the
// default, perhaps only since it went offline; the elections are then run
// again (Kafka elects when the config changes, not at the next broker
// change).
func (c *controllerActor) uncleanMayElect() bool {
	if c.snap == nil {
		return false
	}
	defaults := c.topicDefaults()
	allowed := map[string]bool{}
	for tp, part := range c.snap.Partitions {
		if part.State.Leader >= 0 {
			continue
		}
		unclean, seen := allowed[tp.Topic]
		if !seen {
			if t := c.snap.Topics[tp.Topic]; t != nil {
				tc, _ := actors.ParseTopicConfig(defaults, t.Configs)
				unclean = tc.UncleanLeaderElection
			}
			allowed[tp.Topic] = unclean
		}
		if unclean {
			return true
		}
	}
	return false
}

// electAll brings every partition in line with the live brokers: new
// leaders for partitions whose leader is gone, dead followers out of ISRs.
func (c *controllerActor) electAll(ctx actor.Context) {
	if !c.liveKnown {
		return
	}
	if c.busy {
		c.electAgain = true // once the step out is back, on its snapshot
		return
	}
	if c.trusted() != "" {
		return
	}
	var updates []cluster.PartitionUpdate
	var changed []*messages.PartitionState
	elections := 0
	defaults := c.topicDefaults()
	for tp, part := range c.snap.Partitions {
		topic := c.snap.Topics[tp.Topic]
		if topic == nil {
			continue
		}
		tc, _ := actors.ParseTopicConfig(defaults, topic.Configs)
		live := c.liveFor(tp)
		next, ok := election.OnLiveBrokers(toElection(part.State), live, tc.UncleanLeaderElection)
		// A move whose target caught up before a controller failover
		// completes here.
		if done, completed := election.Complete(next, live); completed {
			next, ok = done, true
			c.cfg.Logger.Info("partition reassignment completed", "partition", tp, "replicas", done.Replicas)
		}
		if !ok {
			continue
		}
		st := fromElection(part.State, next)
		updates = append(updates, cluster.PartitionUpdate{State: st, ExpectVersion: part.Version})
		changed = append(changed, st)
		if st.Leader >= 0 && st.Leader != part.State.Leader {
			elections++ // a leader chosen (not a partition going offline)
		}
		c.cfg.Logger.Info("partition leadership change", "partition", tp, "leader", st.Leader,
			"leader_epoch", st.LeaderEpoch, "isr", st.Isr, "was_leader", part.State.Leader, "was_isr", part.State.Isr)
	}
	if len(updates) == 0 {
		return
	}
	c.commitStates(ctx, false, updates, changed, elections, func(ctx actor.Context, err error) {
		if err == nil {
			return
		}
		c.cfg.Logger.Warn("controller could not commit elections; retrying", "error", err)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(500*time.Millisecond, func() { root.Send(self, retryElections{}) })
	})
}

// commitStates writes updates beside the actor (for the current request,
// which a stop answers, when forRequest), then counts the leaders elected
// and tells the brokers of changed; done runs on the actor after, with the
// write's error.
func (c *controllerActor) commitStates(ctx actor.Context, forRequest bool, updates []cluster.PartitionUpdate,
	changed []*messages.PartitionState, elected int, done func(actor.Context, error)) {
	step := func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		err := writeUpdates(store, fence, updates)
		return func(ctx actor.Context) {
			if err != nil {
				c.cfg.Metrics.MetadataStoreError("controller write")
			} else {
				c.cfg.Metrics.Elected(elected)
				c.announce(ctx, changed)
			}
			done(ctx, err)
		}
	}
	if forRequest {
		c.besideFor(ctx, true, step)
	} else {
		c.beside(ctx, true, step)
	}
}

// writeUpdates commits updates in chunks the store accepts in one
// transaction (beside the actor).
func writeUpdates(store cluster.MetadataStore, fence cluster.Fence, updates []cluster.PartitionUpdate) error {
	const chunk = 100
	for len(updates) > 0 {
		n := min(chunk, len(updates))
		ctx, cancel := storeContext()
		err := store.UpdatePartitions(ctx, fence, updates[:n])
		cancel()
		if err != nil {
			return err
		}
		updates = updates[n:]
	}
	return nil
}

// announce pushes new partition states to the live brokers that host them,
// ahead of their metadata watch.
func (c *controllerActor) announce(ctx actor.Context, states []*messages.PartitionState) {
	byBroker := map[int32][]*messages.PartitionState{}
	for _, st := range states {
		for _, id := range st.Replicas {
			byBroker[id] = append(byBroker[id], st)
		}
	}
	for _, b := range c.live {
		if sts := byBroker[b.ID]; len(sts) > 0 {
			// As a request, so the broker can tell where it came from.
			ctx.Request(transport.BrokerPID(b.Addr), &messages.LeaderAndIsrRequest{ControllerId: c.cfg.ID,
				ControllerEpoch: c.lead.Epoch, States: sts})
		}
	}
}

// onAlterPartition commits a leader's ISR proposal if it is still valid.
func (c *controllerActor) onAlterPartition(ctx actor.Context, req *messages.AlterPartitionRequest) {
	sender := ctx.Sender()
	if why := c.trusted(); why != "" {
		actors.SendTo(ctx, sender, &messages.AlterPartitionResponse{Error: messages.ErrorCode_INCONSISTENT_CLUSTER_ID, ErrorMessage: why})
		return
	}
	tp := cluster.TopicPartition{Topic: req.Topic, Partition: req.Partition}
	part, ok := c.snap.Partitions[tp]
	if !ok {
		actors.SendTo(ctx, sender, &messages.AlterPartitionResponse{Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, ErrorMessage: tp.String()})
		return
	}
	// A replica the leader adds fetches and appends again: it serves.
	for _, id := range req.NewIsr {
		delete(c.offline[tp], id)
	}
	next, rej := election.AlterISR(toElection(part.State), election.Proposal{Leader: req.BrokerId, LeaderEpoch: req.LeaderEpoch,
		PartitionEpoch: req.PartitionEpoch, ISR: req.NewIsr, Epochs: req.IsrEpochs}, c.isLive)
	if rej != nil {
		code := messages.ErrorCode_INVALID_REQUEST
		switch rej.Code {
		case election.RejectFencedEpoch:
			code = messages.ErrorCode_FENCED_LEADER_EPOCH
		case election.RejectStalePartitionEpoch:
			code = messages.ErrorCode_INVALID_PARTITION_EPOCH
		case election.RejectStaleBrokerEpoch:
			code = messages.ErrorCode_STALE_BROKER_EPOCH
		}
		actors.SendTo(ctx, sender, &messages.AlterPartitionResponse{Error: code, ErrorMessage: rej.Reason, State: part.State})
		return
	}
	// The ISR change that brings a move's last target replica in sync
	// completes the move in the same write.
	completed := false
	if done, ok := election.Complete(next, c.liveFor(tp)); ok {
		next, completed = done, true
	}
	st := fromElection(part.State, next)
	update := []cluster.PartitionUpdate{{State: st, ExpectVersion: part.Version}}
	c.besideFor(ctx, true, func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		err := writeUpdates(store, fence, update)
		return func(ctx actor.Context) {
			if err != nil {
				actors.SendTo(ctx, sender, &messages.AlterPartitionResponse{
					Error: c.storeErrorCode(err, messages.ErrorCode_INVALID_PARTITION_EPOCH), ErrorMessage: err.Error()})
				return
			}
			c.cfg.Logger.Info("committed ISR change", "partition", tp, "isr", st.Isr, "was", part.State.Isr, "partition_epoch", st.PartitionEpoch)
			if completed {
				c.cfg.Logger.Info("partition reassignment completed", "partition", tp, "replicas", st.Replicas, "leader", st.Leader)
			}
			c.announce(ctx, []*messages.PartitionState{st})
			actors.SendTo(ctx, sender, &messages.AlterPartitionResponse{State: st})
		}
	})
}

// onAllocateProducerIDs hands a broker a block of producer ids no other
// broker got, from the fenced metadata store.
func (c *controllerActor) onAllocateProducerIDs(ctx actor.Context, req *messages.AllocateProducerIdsRequest) {
	sender := ctx.Sender()
	count := req.Count
	if why := c.trusted(); why != "" {
		actors.SendTo(ctx, sender, &messages.AllocateProducerIdsResponse{Error: messages.ErrorCode_INCONSISTENT_CLUSTER_ID, ErrorMessage: why})
		return
	}
	if count <= 0 || count > 100000 {
		actors.SendTo(ctx, sender, &messages.AllocateProducerIdsResponse{Error: messages.ErrorCode_INVALID_REQUEST, ErrorMessage: fmt.Sprintf("count %d", count)})
		return
	}
	atLeast := req.AtLeast
	// With principals, ids are bound to them with the security record's
	// key (acl.ProducerIDs): it is stored before the first block.
	needKey := c.cfg.Secure && c.snap != nil && (c.snap.Security == nil || len(c.snap.Security.ProducerIdKey) == 0)
	snap := c.snap
	c.besideFor(ctx, needKey, func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		if needKey {
			refused, err := changeSecurity(store, fence, snap, producerIDKeyChange)
			if err == nil && refused != nil {
				err = fmt.Errorf("storing the producer id key: %s", refused.(*messages.AllocateProducerIdsResponse).ErrorMessage)
			}
			if err != nil {
				return func(ctx actor.Context) {
					actors.SendTo(ctx, sender, &messages.AllocateProducerIdsResponse{
						Error: c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), ErrorMessage: err.Error()})
				}
			}
		}
		sctx, cancel := storeContext()
		first, err := store.AllocateProducerIDs(sctx, fence, int64(count), atLeast)
		cancel()
		return func(ctx actor.Context) {
			if err != nil {
				actors.SendTo(ctx, sender, &messages.AllocateProducerIdsResponse{
					Error: c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), ErrorMessage: err.Error()})
				return
			}
			actors.SendTo(ctx, sender, &messages.AllocateProducerIdsResponse{First: first, Count: count})
		}
	})
}

// storeErrorCode is the error code of a failed metadata write: fallback
// unless the write was refused for this controller's fence or cluster id.
// The failure is counted in the metrics.
func (c *controllerActor) storeErrorCode(err error, fallback messages.ErrorCode) messages.ErrorCode {
	c.cfg.Metrics.MetadataStoreError("controller write")
	switch {
	case errors.Is(err, cluster.ErrClusterIDChanged):
		return messages.ErrorCode_INCONSISTENT_CLUSTER_ID
	case errors.Is(err, cluster.ErrFenced):
		return messages.ErrorCode_NOT_CONTROLLER
	}
	return fallback
}
