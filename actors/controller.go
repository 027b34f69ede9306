package actors

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors/placement"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
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

// controllerActor owns every metadata write: topic creation and deletion,
// replica placement and (in a cluster) leader election and ISR commits. It
// runs on the broker that holds the controller lock, with the lock's fence.
type controllerActor struct {
	cfg   *BrokerConfig
	store cluster.MetadataStore
	lead  *cluster.Leadership
	live  []cluster.Broker
}

func newControllerActor(cfg *BrokerConfig, store cluster.MetadataStore, lead *cluster.Leadership) actor.Producer {
	return func() actor.Actor {
		return &controllerActor{cfg: cfg, store: store, lead: lead}
	}
}

func (c *controllerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *brokersUpdated:
		c.live = msg.brokers
	case *messages.CreateTopicsRequest:
		respond(ctx, c.onCreateTopics(msg))
	case *messages.DeleteTopicsRequest:
		respond(ctx, c.onDeleteTopics(msg))
	case *messages.InvalidMessage:
		respond(ctx, &messages.ErrorResponse{Error: messages.ErrorCode_UNKNOWN_MESSAGE_TYPE, Message: fmt.Sprintf("%s: %s", msg.TypeName, msg.Reason)})
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		if _, ok := msg.(proto.Message); ok {
			respond(ctx, unknownMessage(msg))
		}
	}
}

func (c *controllerActor) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (c *controllerActor) onCreateTopics(req *messages.CreateTopicsRequest) *messages.CreateTopicsResponse {
	resp := &messages.CreateTopicsResponse{}
	for _, spec := range req.Topics {
		code, text := c.createTopic(spec, req.ValidateOnly)
		resp.Results = append(resp.Results, &messages.TopicResult{Name: spec.Name, Error: code, ErrorMessage: text})
	}
	return resp
}

func (c *controllerActor) createTopic(spec *messages.TopicSpec, validateOnly bool) (messages.ErrorCode, string) {
	if err := ValidateTopicName(spec.Name); err != nil {
		return messages.ErrorCode_INVALID_TOPIC, err.Error()
	}
	partitions := int(spec.Partitions)
	if partitions == 0 {
		partitions = c.cfg.DefaultPartitions
	}
	if partitions < 1 || partitions > MaxPartitions {
		return messages.ErrorCode_INVALID_PARTITIONS, fmt.Sprintf("partitions %d: want 1 to %d", spec.Partitions, MaxPartitions)
	}
	rf := int(spec.ReplicationFactor)
	if rf == 0 {
		rf = c.cfg.DefaultReplicationFactor
	}
	if rf < 1 {
		return messages.ErrorCode_INVALID_REPLICATION_FACTOR, fmt.Sprintf("replication factor %d: must be >= 1", spec.ReplicationFactor)
	}
	if _, err := ParseTopicConfig(c.cfg.DefaultTopic, spec.Configs); err != nil {
		return messages.ErrorCode_INVALID_CONFIG, err.Error()
	}
	ids := make([]int32, 0, len(c.live))
	for _, b := range c.live {
		ids = append(ids, b.ID)
	}
	assignment, err := placement.Assign(ids, partitions, rf, rand.Int(), rand.Int())
	if err != nil {
		return messages.ErrorCode_INVALID_REPLICATION_FACTOR, err.Error()
	}
	if validateOnly {
		return messages.ErrorCode_NONE, ""
	}
	topic := &messages.TopicRecord{
		Name: spec.Name, TopicId: cluster.NewTopicID(), Partitions: int32(partitions),
		ReplicationFactor: int32(rf), Configs: spec.Configs, CreatedUnixMs: time.Now().UnixMilli(),
	}
	states := make([]*messages.PartitionState, partitions)
	for p, replicas := range assignment {
		topic.Assignment = append(topic.Assignment, &messages.ReplicaAssignment{Replicas: replicas})
		states[p] = &messages.PartitionState{
			Topic: spec.Name, Partition: int32(p), TopicId: topic.TopicId,
			Leader: replicas[0], LeaderEpoch: 0, Isr: replicas, PartitionEpoch: 0, Replicas: replicas,
		}
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	switch err := c.store.CreateTopic(ctx, c.lead.Fence, topic, states); {
	case errors.Is(err, cluster.ErrTopicExists):
		return messages.ErrorCode_TOPIC_ALREADY_EXISTS, fmt.Sprintf("topic %q already exists", spec.Name)
	case errors.Is(err, cluster.ErrFenced):
		return messages.ErrorCode_NOT_CONTROLLER, err.Error()
	case err != nil:
		return messages.ErrorCode_UNKNOWN_SERVER_ERROR, err.Error()
	}
	c.cfg.Logger.Info("created topic", "topic", spec.Name, "partitions", partitions, "replication_factor", rf)
	return messages.ErrorCode_NONE, ""
}

func (c *controllerActor) onDeleteTopics(req *messages.DeleteTopicsRequest) *messages.DeleteTopicsResponse {
	resp := &messages.DeleteTopicsResponse{}
	for _, name := range req.Names {
		r := &messages.TopicResult{Name: name}
		ctx, cancel := c.storeCtx()
		err := c.store.DeleteTopic(ctx, c.lead.Fence, name)
		cancel()
		switch {
		case errors.Is(err, cluster.ErrTopicNotFound):
			r.Error, r.ErrorMessage = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("topic %q does not exist", name)
		case errors.Is(err, cluster.ErrFenced):
			r.Error, r.ErrorMessage = messages.ErrorCode_NOT_CONTROLLER, err.Error()
		case err != nil:
			r.Error, r.ErrorMessage = messages.ErrorCode_UNKNOWN_SERVER_ERROR, err.Error()
		default:
			c.cfg.Logger.Info("deleted topic", "topic", name)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
