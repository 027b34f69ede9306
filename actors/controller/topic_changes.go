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
)

// onAlterTopicConfigs applies each topic's config change (Kafka's
// IncrementalAlterConfigs): the keys set are validated with the rest of
// the topic's configuration, deleted keys fall back to the broker default.
// Brokers pick the new configuration up from the metadata.
func (c *controllerActor) onAlterTopicConfigs(ctx actor.Context, req *messages.AlterTopicConfigsRequest) *messages.AlterTopicConfigsResponse {
	resp := &messages.AlterTopicConfigsResponse{}
	for _, ch := range req.Topics {
		code, text := c.alterTopicConfig(ch, req.ValidateOnly)
		resp.Results = append(resp.Results, &messages.TopicResult{Name: ch.Name, Error: code, ErrorMessage: text})
	}
	return resp
}

func (c *controllerActor) alterTopicConfig(ch *messages.TopicConfigChange, validateOnly bool) (messages.ErrorCode, string) {
	prev, code, text := c.changeableTopic(ch.Name)
	if code != messages.ErrorCode_NONE {
		return code, text
	}
	configs := maps.Clone(prev.Configs)
	if configs == nil {
		configs = map[string]string{}
	}
	for _, k := range ch.Delete {
		if _, set := ch.Set[k]; set {
			return messages.ErrorCode_INVALID_CONFIG, fmt.Sprintf("%s is both set and deleted", k)
		}
		// Deleting a key the topic does not set is allowed (as in Kafka),
		// but not a key no topic has.
		if !slices.Contains(actors.TopicConfigNames, k) {
			return messages.ErrorCode_INVALID_CONFIG, fmt.Sprintf("unknown topic config %q", k)
		}
		delete(configs, k)
	}
	maps.Copy(configs, ch.Set)
	if _, err := actors.ParseTopicConfig(c.cfg.DefaultTopic, configs); err != nil {
		return messages.ErrorCode_INVALID_CONFIG, err.Error()
	}
	if validateOnly {
		return messages.ErrorCode_NONE, ""
	}
	next := proto.Clone(prev).(*messages.TopicRecord)
	next.Configs = configs
	if code, text := c.updateTopic(prev, next, nil); code != messages.ErrorCode_NONE {
		return code, text
	}
	c.cfg.Logger.Info("altered topic config", "topic", ch.Name, "set", ch.Set, "deleted", ch.Delete)
	return messages.ErrorCode_NONE, ""
}

// onCreatePartitions grows topics (Kafka's CreatePartitions). New
// partitions are placed as at creation, with the topic's replication
// factor; keys may map to other partitions afterwards, as in Kafka.
func (c *controllerActor) onCreatePartitions(ctx actor.Context, req *messages.CreatePartitionsRequest) *messages.CreatePartitionsResponse {
	resp := &messages.CreatePartitionsResponse{}
	for _, pc := range req.Topics {
		code, text := c.createPartitions(ctx, pc, req.ValidateOnly)
		resp.Results = append(resp.Results, &messages.TopicResult{Name: pc.Name, Error: code, ErrorMessage: text})
	}
	return resp
}

func (c *controllerActor) createPartitions(ctx actor.Context, pc *messages.PartitionCount, validateOnly bool) (messages.ErrorCode, string) {
	prev, code, text := c.changeableTopic(pc.Name)
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
	ids := make([]int32, 0, len(c.live))
	for _, b := range c.live {
		ids = append(ids, b.ID)
	}
	assignment, err := placement.Assign(ids, int(pc.Count-prev.Partitions), int(prev.ReplicationFactor), rand.Int(), rand.Int())
	if err != nil {
		return messages.ErrorCode_INVALID_REPLICATION_FACTOR, err.Error()
	}
	if why := c.overPartitionLimit(pc.Name, assignment); why != "" {
		return messages.ErrorCode_INVALID_PARTITIONS, why
	}
	if validateOnly {
		return messages.ErrorCode_NONE, ""
	}
	next := proto.Clone(prev).(*messages.TopicRecord)
	added := c.newPartitions(next, assignment)
	if code, text := c.updateTopic(prev, next, added); code != messages.ErrorCode_NONE {
		return code, text
	}
	c.cfg.Logger.Info("added partitions", "topic", pc.Name, "from", prev.Partitions, "to", next.Partitions)
	c.announce(ctx, added)
	return messages.ErrorCode_NONE, ""
}

// changeableTopic returns the stored record of a topic a client may change.
func (c *controllerActor) changeableTopic(name string) (*messages.TopicRecord, messages.ErrorCode, string) {
	if why := c.trusted(); why != "" {
		return nil, messages.ErrorCode_INCONSISTENT_CLUSTER_ID, why
	}
	if name == actors.OffsetsTopic {
		// Groups hash onto its partitions and rely on its settings.
		return nil, messages.ErrorCode_INVALID_TOPIC, "the internal topic " + actors.OffsetsTopic + " cannot be changed"
	}
	c.reload()
	if c.snap == nil || c.snap.Topics[name] == nil {
		return nil, messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q does not exist", name)
	}
	return c.snap.Topics[name], messages.ErrorCode_NONE, ""
}

// updateTopic writes next over prev and reloads the snapshot.
func (c *controllerActor) updateTopic(prev, next *messages.TopicRecord, added []*messages.PartitionState) (messages.ErrorCode, string) {
	sctx, cancel := c.storeCtx()
	defer cancel()
	err := c.store.UpdateTopic(sctx, c.lead.Fence, prev, next, added)
	c.reload()
	switch {
	case errors.Is(err, cluster.ErrTopicNotFound):
		return messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q does not exist", prev.Name)
	case errors.Is(err, cluster.ErrConflict):
		// Only another writer of the store gets here (this actor changes
		// topics one at a time): the request may simply be sent again.
		return messages.ErrorCode_UNKNOWN_SERVER_ERROR, fmt.Sprintf("topic %q changed meanwhile; try again", prev.Name)
	case err != nil:
		return c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), err.Error()
	}
	return messages.ErrorCode_NONE, ""
}
