package client

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Admin manages topics and reads cluster state.
type Admin struct {
	cfg  config
	node *node
	meta *metadata
}

// TopicSpec describes a topic to create.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int32 // 0: the broker default
	Configs           map[string]string
}

// PartitionInfo is one partition as the cluster sees it. The offsets come
// from the live leader replica (-1 when it is unreachable).
type PartitionInfo struct {
	Partition       int32
	Leader          int32
	LeaderEpoch     int32
	Replicas        []int32
	ISR             []int32
	OfflineReplicas []int32
	LogStartOffset  int64
	LogEndOffset    int64
	HighWatermark   int64
	// SizeBytes is the leader's log size on disk.
	SizeBytes int64
	// RecordsFetched is what consumers fetched from the partition's live
	// replicas: the sum of their counters, each of which starts again
	// when its broker does.
	RecordsFetched int64
	Err            error
	// ReplicaStates has every live replica's own view, by broker id.
	ReplicaStates map[int32]*messages.ReplicaState
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	TopicID    string
	Configs    map[string]string
	Partitions []PartitionInfo
	// Brokers are the live brokers of the cluster when it was described.
	Brokers []BrokerInfo
	// Err is why the topic could not be described (DescribeTopics only).
	Err error
}

// NewAdmin connects an admin client to the cluster that broker belongs to.
func NewAdmin(broker string, opts ...AdminOpt) (*Admin, error) {
	return newAdmin(broker, configOf(opts))
}

func newAdmin(broker string, cfg config) (*Admin, error) {
	n, err := acquireNode(&cfg)
	if err != nil {
		return nil, err
	}
	return &Admin{cfg: cfg, node: n, meta: newMetadata(n.system, broker, cfg.requestTimeout, cfg.metadataMaxAge)}, nil
}

// Close releases the admin client.
func (a *Admin) Close() error {
	a.node.release()
	return nil
}

// APITimeout bounds an admin call, retries included, whose context has no
// deadline (Kafka's default.api.timeout.ms). Default 60 s.
func APITimeout(d time.Duration) AdminOpt { return adminOpt(func(c *config) { c.apiTimeout = d }) }

// bounded gives ctx the API timeout when it has no deadline of its own.
func (a *Admin) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || a.cfg.apiTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, a.cfg.apiTimeout)
}

// callAny sends req to any broker, retrying retriable errors until ctx
// ends (or the API timeout passes).
func (a *Admin) callAny(ctx context.Context, req proto.Message) (proto.Message, error) {
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	backoff := 50 * time.Millisecond
	down := 0 // rounds in a row in which no address accepted a connection
	for {
		var lastErr error = ErrNoBrokers
		for _, addr := range a.meta.addrs() {
			res, err := request(a.node.system, addr, req, a.timeout(ctx))
			if err == nil {
				return res, nil
			}
			lastErr = telling(lastErr, err)
			if !retriable(err) {
				return nil, err
			}
		}
		if isNotListening(lastErr) {
			// Nothing listens at any address: the cluster is down or the
			// address wrong, and a second look is enough to say so.
			if down++; down >= 2 {
				return nil, lastErr
			}
		} else {
			down = 0
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up: %v)", lastErr, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (a *Admin) timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(min(time.Until(d), a.cfg.requestTimeout), time.Millisecond)
	}
	return a.cfg.requestTimeout
}

// CreateTopic creates one topic.
func (a *Admin) CreateTopic(ctx context.Context, spec TopicSpec) error {
	res, err := a.CreateTopics(ctx, spec)
	if err != nil {
		return err
	}
	return res[0].Err
}

// TopicResult is the outcome for one topic of a batch operation.
type TopicResult struct {
	Name string
	Err  error
}

// CreateTopics creates topics; each result carries that topic's error.
func (a *Admin) CreateTopics(ctx context.Context, specs ...TopicSpec) ([]TopicResult, error) {
	req := &messages.CreateTopicsRequest{}
	for _, s := range specs {
		req.Topics = append(req.Topics, &messages.TopicSpec{Name: s.Name, Partitions: s.Partitions,
			ReplicationFactor: s.ReplicationFactor, Configs: s.Configs})
	}
	return a.controllerCall(ctx, req, func(res proto.Message) ([]*messages.TopicResult, bool) {
		r, ok := res.(*messages.CreateTopicsResponse)
		return r.GetResults(), ok
	})
}

// DeleteTopic deletes one topic and its data on every broker.
func (a *Admin) DeleteTopic(ctx context.Context, name string) error {
	res, err := a.controllerCall(ctx, &messages.DeleteTopicsRequest{Names: []string{name}}, func(res proto.Message) ([]*messages.TopicResult, bool) {
		r, ok := res.(*messages.DeleteTopicsResponse)
		return r.GetResults(), ok
	})
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("unexpected answer with %d results", len(res))
	}
	return res[0].Err
}

// AlterTopicConfig changes a topic's configuration: the keys in set take
// their values, the keys in del go back to the broker's default, the rest
// stay (Kafka's incremental alter). Every value is checked before any is
// applied.
func (a *Admin) AlterTopicConfig(ctx context.Context, topic string, set map[string]string, del []string) error {
	req := &messages.AlterTopicConfigsRequest{Topics: []*messages.TopicConfigChange{{Name: topic, Set: set, Delete: del}}}
	return a.oneTopicResult(a.controllerCall(ctx, req, func(res proto.Message) ([]*messages.TopicResult, bool) {
		r, ok := res.(*messages.AlterTopicConfigsResponse)
		return r.GetResults(), ok
	}))
}

// CreatePartitions grows a topic to count partitions, placed as at
// creation. Keys may map to other partitions afterwards, as in Kafka.
func (a *Admin) CreatePartitions(ctx context.Context, topic string, count int32) error {
	req := &messages.CreatePartitionsRequest{Topics: []*messages.PartitionCount{{Name: topic, Count: count}}}
	return a.oneTopicResult(a.controllerCall(ctx, req, func(res proto.Message) ([]*messages.TopicResult, bool) {
		r, ok := res.(*messages.CreatePartitionsResponse)
		return r.GetResults(), ok
	}))
}

// oneTopicResult is the error of a single-topic request.
func (a *Admin) oneTopicResult(res []TopicResult, err error) error {
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("unexpected answer with %d results", len(res))
	}
	return res[0].Err
}

// controllerCall sends a request the controller answers, and sends it again
// while the answer says there is no controller yet (a cluster starting or
// electing a new one).
func (a *Admin) controllerCall(ctx context.Context, req proto.Message, results func(proto.Message) ([]*messages.TopicResult, bool)) ([]TopicResult, error) {
	backoff := 50 * time.Millisecond
	for {
		res, err := a.callAny(ctx, req)
		if err != nil {
			return nil, err
		}
		rs, ok := results(res)
		if !ok {
			return nil, fmt.Errorf("unexpected answer %T", res)
		}
		retry := false
		for _, r := range rs {
			retry = retry || r.Error == messages.ErrorCode_NOT_CONTROLLER
		}
		if !retry {
			return topicResults(rs), nil
		}
		select {
		case <-ctx.Done():
			return topicResults(rs), nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func topicResults(rs []*messages.TopicResult) []TopicResult {
	out := make([]TopicResult, len(rs))
	for i, r := range rs {
		out[i] = TopicResult{Name: r.Name, Err: r.Error.Err(r.ErrorMessage)}
	}
	return out
}

// metadata asks a broker for the cluster's metadata for topics (all when
// none given), and keeps what it learns for routing.
func (a *Admin) metadata(ctx context.Context, topics ...string) (*messages.MetadataResponse, error) {
	res, err := a.callAny(ctx, &messages.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.MetadataResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	a.meta.update(resp, len(topics) == 0)
	return resp, nil
}

// ListTopicsOpt configures ListTopics.
type ListTopicsOpt func(*listTopicsOptions)

type listTopicsOptions struct{ internal bool }

// IncludeInternal lists the topics the cluster keeps for itself too
// (__consumer_offsets), which ListTopics leaves out by default, as
// Kafka's admin client does.
func IncludeInternal() ListTopicsOpt { return func(o *listTopicsOptions) { o.internal = true } }

// IsInternalTopic reports whether name is a topic the cluster keeps for
// itself: the group commits of __consumer_offsets.
func IsInternalTopic(name string) bool { return messages.IsInternalTopic(name) }

// ListTopics returns the names of every topic but the internal ones
// (IncludeInternal lists those too), sorted.
func (a *Admin) ListTopics(ctx context.Context, opts ...ListTopicsOpt) ([]string, error) {
	var o listTopicsOptions
	for _, opt := range opts {
		opt(&o)
	}
	md, err := a.metadata(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range md.Topics {
		if o.internal || !IsInternalTopic(t.Name) {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// DescribeTopic returns a topic's partitions with leader, replicas, ISR and
// the log start, LEO and HW read from the live replicas.
func (a *Admin) DescribeTopic(ctx context.Context, name string) (*TopicInfo, error) {
	infos, err := a.DescribeTopics(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(infos) != 1 {
		return nil, fmt.Errorf("unexpected metadata for %q", name)
	}
	t := infos[0]
	if t.Err != nil && len(t.Partitions) == 0 {
		return nil, t.Err
	}
	return t, nil
}

// DescribeTopics describes the topics named, or every topic when none is,
// with one metadata request and one replica-state request per broker. A
// topic that cannot be described has Err set.
func (a *Admin) DescribeTopics(ctx context.Context, names ...string) ([]*TopicInfo, error) {
	md, err := a.metadata(ctx, names...)
	if err != nil {
		return nil, err
	}
	type tp struct {
		topic     string
		partition int32
	}
	states := map[tp]map[int32]*messages.ReplicaState{} // (topic, partition) -> broker -> state
	for _, b := range md.Brokers {
		res, err := request(a.node.system, b.Address, &messages.DescribeReplicasRequest{Topics: names}, a.timeout(ctx))
		if err != nil {
			continue
		}
		if resp, ok := res.(*messages.DescribeReplicasResponse); ok {
			for _, rs := range resp.Replicas {
				k := tp{rs.Topic, rs.Partition}
				if states[k] == nil {
					states[k] = map[int32]*messages.ReplicaState{}
				}
				states[k][rs.BrokerId] = rs
			}
		}
	}
	brokers := brokerInfos(md)
	var out []*TopicInfo
	for _, t := range md.Topics {
		info := &TopicInfo{Name: t.Name, TopicID: t.TopicId, Configs: t.Configs, Brokers: brokers, Err: t.Error.Err(t.ErrorMessage)}
		for _, p := range t.Partitions {
			rs := states[tp{t.Name, p.Partition}]
			pi := PartitionInfo{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.Isr, OfflineReplicas: p.OfflineReplicas,
				LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1, Err: p.Error.Err(""), ReplicaStates: rs}
			for _, s := range rs {
				pi.RecordsFetched += s.RecordsFetched
			}
			if ls := rs[p.Leader]; ls != nil {
				pi.LogStartOffset, pi.LogEndOffset, pi.HighWatermark, pi.SizeBytes = ls.LogStartOffset, ls.LogEndOffset, ls.HighWatermark, ls.SizeBytes
				if ls.Error != messages.ErrorCode_NONE {
					pi.Err = ls.Error.Err(ls.ErrorMessage)
				}
			}
			info.Partitions = append(info.Partitions, pi)
		}
		out = append(out, info)
	}
	return out, nil
}

// ListOffset returns a partition's offset for timestamp: -2 earliest, -1
// latest (the HW), -3 the record with the largest timestamp below the HW
// (-1 if none), otherwise the first offset with a timestamp >= it (-1 if none).
func (a *Admin) ListOffset(ctx context.Context, topic string, partition int32, timestamp int64) (int64, error) {
	if _, err := a.meta.partitionCount(ctx, topic, false); err != nil {
		return -1, err
	}
	addr, _, err := a.meta.leader(topic, partition)
	if err != nil {
		return -1, err
	}
	res, err := request(a.node.system, addr, &messages.ListOffsetsRequest{Topic: topic, Partition: partition,
		Timestamp: timestamp, CurrentLeaderEpoch: -1}, a.timeout(ctx))
	if err != nil {
		return -1, err
	}
	resp, ok := res.(*messages.ListOffsetsResponse)
	if !ok {
		return -1, fmt.Errorf("unexpected answer %T", res)
	}
	return resp.Offset, resp.Error.Err(resp.ErrorMessage)
}

// Request sends one raw protocol message to the broker at addr (any known
// broker when addr is empty) and returns its answer. Broker-level failures
// (an unknown message type, an unreachable broker) come back as errors;
// errors inside a response are left in the response.
func (a *Admin) Request(ctx context.Context, addr string, req proto.Message) (proto.Message, error) {
	if addr == "" {
		return a.callAny(ctx, req)
	}
	return request(a.node.system, addr, req, a.timeout(ctx))
}
