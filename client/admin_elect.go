package client

import (
	"context"

	"github.com/sluicemq/sluice/messages"
)

// ElectionTarget names partitions of a topic for ElectLeaders (every
// partition of the topic when Partitions is empty).
type ElectionTarget struct {
	Topic      string
	Partitions []int32
}

// ElectionResult is what a preferred-leader election did to one partition:
// Err is nil when its preferred replica leads now.
type ElectionResult struct {
	Topic     string
	Partition int32
	Err       error
}

// ElectLeaders gives partitions to their preferred replicas (the first of
// each partition's replicas), as Kafka's preferred leader election: every
// partition of the cluster when no target is given. A partition whose
// preferred replica leads already gets an error with ELECTION_NOT_NEEDED,
// one whose preferred replica is not alive and in sync
// PREFERRED_LEADER_NOT_AVAILABLE, one that does not exist
// UNKNOWN_TOPIC_OR_PARTITION (partition -1 for a topic that does not).
// With TLS it needs Alter on the cluster.
func (a *Admin) ElectLeaders(ctx context.Context, targets ...ElectionTarget) ([]ElectionResult, error) {
	req := &messages.ElectLeadersRequest{}
	for _, t := range targets {
		req.Partitions = append(req.Partitions, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
	}
	r, err := callController(ctx, a, req, func(r *messages.ElectLeadersResponse) (messages.ErrorCode, string) {
		return r.Error, r.ErrorMessage
	})
	if err != nil {
		return nil, err
	}
	out := make([]ElectionResult, len(r.Results))
	for i, p := range r.Results {
		out[i] = ElectionResult{Topic: p.Topic, Partition: p.Partition, Err: p.Error.Err("")}
	}
	return out, nil
}
