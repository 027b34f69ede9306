package controller

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/placement"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/topicconfig"
)

// topicChange is one planned change of a topic's record: next replaces
// prev (if the store still holds prev), adding the partitions in added.
type topicChange struct {
	result     *messages.TopicResult
	prev, next *messages.TopicRecord
	added      []*messages.PartitionState
	done       func() // logs the change once it is stored
}

// topicChanges plans the changes of one request: a topic changed twice
// is changed the second time over the first change.
type topicChanges struct {
	c       *controllerActor
	latest  map[string]*messages.TopicRecord
	planned []*topicChange
}

func (c *controllerActor) newTopicChanges() *topicChanges {
	return &topicChanges{c: c, latest: map[string]*messages.TopicRecord{}}
}

// changeable returns the record of a topic a client may change, as the
// changes planned so far leave it.
func (tc *topicChanges) changeable(name string) (*messages.TopicRecord, messages.ErrorCode, string) {
	c := tc.c
	if why := c.trusted(); why != "" {
		return nil, messages.ErrorCode_INCONSISTENT_CLUSTER_ID, why
	}
	if name == actors.OffsetsTopic {
		// Groups hash onto its partitions and rely on its settings.
		return nil, messages.ErrorCode_INVALID_TOPIC, "the internal topic " + actors.OffsetsTopic + " cannot be changed"
	}
	if rec := tc.latest[name]; rec != nil {
		return rec, messages.ErrorCode_NONE, ""
	}
	if c.snap.Topics[name] == nil {
		return nil, messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q does not exist", name)
	}
	return c.snap.Topics[name], messages.ErrorCode_NONE, ""
}

func (tc *topicChanges) add(ch *topicChange) {
	tc.latest[ch.next.Name] = ch.next
	tc.planned = append(tc.planned, ch)
}

// commit stores the planned changes one after the other beside the actor,
// then fills in their results, tells the brokers of added partitions and
// answers with resp.
func (tc *topicChanges) commit(ctx actor.Context, sender *actor.PID, resp proto.Message) {
	c := tc.c
	if len(tc.planned) == 0 {
		actors.SendTo(ctx, sender, resp)
		return
	}
	planned := tc.planned
	c.besideFor(ctx, true, func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		errs := make([]error, len(planned))
		for i, ch := range planned {
			sctx, cancel := storeContext()
			errs[i] = store.UpdateTopic(sctx, fence, ch.prev, ch.next, ch.added)
			cancel()
		}
		return func(ctx actor.Context) {
			var added []*messages.PartitionState
			for i, ch := range planned {
				r := ch.result
				switch err := errs[i]; {
				case errors.Is(err, cluster.ErrTopicNotFound):
					r.Error, r.ErrorMessage = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q does not exist", ch.prev.Name)
				case errors.Is(err, cluster.ErrConflict):
					// Only another writer of the store gets here (this actor
					// changes topics one step at a time): the request may
					// simply be sent again.
					r.Error, r.ErrorMessage = messages.ErrorCode_UNKNOWN_SERVER_ERROR, fmt.Sprintf("topic %q changed meanwhile; try again", ch.prev.Name)
				case err != nil:
					r.Error, r.ErrorMessage = c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), err.Error()
				default:
					ch.done()
					added = append(added, ch.added...)
				}
			}
			c.announce(ctx, added)
			actors.SendTo(ctx, sender, resp)
		}
	})
}

// onAlterTopicConfigs applies each topic's config change (Kafka's
// IncrementalAlterConfigs): the keys set are validated with the rest of
// the topic's configuration, deleted keys fall back to the broker default.
// Brokers pick the new configuration up from the metadata.
func (c *controllerActor) onAlterTopicConfigs(ctx actor.Context, req *messages.AlterTopicConfigsRequest) {
	resp := &messages.AlterTopicConfigsResponse{}
	changes := c.newTopicChanges()
	for _, ch := range req.Topics {
		r := &messages.TopicResult{Name: ch.Name}
		r.Error, r.ErrorMessage = c.planTopicConfig(changes, r, ch, req.ValidateOnly)
		resp.Results = append(resp.Results, r)
	}
	changes.commit(ctx, ctx.Sender(), resp)
}

func (c *controllerActor) planTopicConfig(changes *topicChanges, r *messages.TopicResult, ch *messages.TopicConfigChange, validateOnly bool) (messages.ErrorCode, string) {
	prev, code, text := changes.changeable(ch.Name)
	if code != messages.ErrorCode_NONE {
		return code, text
	}
	configs := maps.Clone(prev.Configs)
	if configs == nil || ch.Replace {
		configs = map[string]string{}
	}
	for _, k := range ch.Delete {
		if _, set := ch.Set[k]; set {
			return messages.ErrorCode_INVALID_CONFIG, fmt.Sprintf("%s is both set and deleted", k)
		}
		// Deleting a key the topic does not set is allowed (as in Kafka),
		// but not a key no topic has.
		if _, known := topicconfig.Lookup(k); !known {
			return messages.ErrorCode_INVALID_CONFIG, fmt.Sprintf("unknown topic config %q", k)
		}
		delete(configs, k)
	}
	maps.Copy(configs, ch.Set)
	for _, edit := range []struct {
		items    map[string]string
		subtract bool
	}{{ch.Append, false}, {ch.Subtract, true}} {
		for _, k := range slices.Sorted(maps.Keys(edit.items)) {
			current, set := configs[k]
			v, err := topicconfig.Edit(k, current, set, edit.items[k], edit.subtract)
			if err != nil {
				return messages.ErrorCode_INVALID_CONFIG, err.Error()
			}
			configs[k] = v
		}
	}
	if _, err := actors.ParseTopicConfig(c.topicDefaults(), configs); err != nil {
		return messages.ErrorCode_INVALID_CONFIG, err.Error()
	}
	if validateOnly {
		return messages.ErrorCode_NONE, ""
	}
	next := proto.Clone(prev).(*messages.TopicRecord)
	next.Configs = configs
	changes.add(&topicChange{result: r, prev: prev, next: next, done: func() {
		c.cfg.Logger.Info("altered topic config", "topic", ch.Name, "configs", configs, "was", prev.Configs)
	}})
	return messages.ErrorCode_NONE, ""
}

// onCreatePartitions grows topics (Kafka's CreatePartitions). New
// partitions are placed as at creation, with the topic's replication
// factor; keys may map to other partitions afterwards, as in Kafka.
func (c *controllerActor) onCreatePartitions(ctx actor.Context, req *messages.CreatePartitionsRequest) {
	resp := &messages.CreatePartitionsResponse{}
	changes := c.newTopicChanges()
	for _, pc := range req.Topics {
		r := &messages.TopicResult{Name: pc.Name}
		r.Error, r.ErrorMessage = c.planPartitions(changes, r, pc, req.ValidateOnly)
		resp.Results = append(resp.Results, r)
	}
	changes.commit(ctx, ctx.Sender(), resp)
}

func (c *controllerActor) planPartitions(changes *topicChanges, r *messages.TopicResult, pc *messages.PartitionCount, validateOnly bool) (messages.ErrorCode, string) {
	prev, code, text := changes.changeable(pc.Name)
	if code != messages.ErrorCode_NONE {
		return code, text
	}
	switch {
	case pc.Count <= prev.Partitions:
		return messages.ErrorCode_INVALID_PARTITIONS, fmt.Sprintf("topic %q has %d partitions; the count can only grow (asked for %d)",
			pc.Name, prev.Partitions, pc.Count)
	case pc.Count > MaxPartitions:
		return messages.ErrorCode_INVALID_PARTITIONS, fmt.Sprintf("partitions %d: want at most %d", pc.Count, MaxPartitions)
	}
	if code, why := c.knowsLiveBrokers(); code != messages.ErrorCode_NONE {
		return code, why
	}
	assignment, err := placement.AssignWithRacks(c.liveRacks(), int(pc.Count-prev.Partitions), int(prev.ReplicationFactor), rand.Int(), rand.Int())
	if err != nil {
		return messages.ErrorCode_INVALID_REPLICATION_FACTOR, err.Error()
	}
	var pending [][]int32
	for _, ch := range changes.planned {
		for _, st := range ch.added {
			pending = append(pending, st.Replicas)
		}
	}
	if why := c.overPartitionLimit(pc.Name, assignment, pending); why != "" {
		return messages.ErrorCode_INVALID_PARTITIONS, why
	}
	if validateOnly {
		return messages.ErrorCode_NONE, ""
	}
	next := proto.Clone(prev).(*messages.TopicRecord)
	added := c.newPartitions(next, assignment)
	changes.add(&topicChange{result: r, prev: prev, next: next, added: added, done: func() {
		c.cfg.Logger.Info("added partitions", "topic", pc.Name, "from", prev.Partitions, "to", next.Partitions)
	}})
	return messages.ErrorCode_NONE, ""
}
