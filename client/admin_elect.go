package client

import (
	"context"
	"fmt"
	"time"

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
	backoff := 50 * time.Millisecond
	for {
		res, err := a.callAny(ctx, req)
		if err != nil {
			return nil, err
		}
		r, ok := res.(*messages.ElectLeadersResponse)
		if !ok {
			return nil, fmt.Errorf("unexpected answer %T", res)
		}
		if r.Error == messages.ErrorCode_NOT_CONTROLLER {
			// No controller yet (a cluster starting or electing one).
			select {
			case <-ctx.Done():
				return nil, r.Error.Err(r.ErrorMessage)
			case <-time.After(backoff):
				backoff = min(2*backoff, time.Second)
				continue
			}
		}
		if err := r.Error.Err(r.ErrorMessage); err != nil {
			return nil, err
		}
		out := make([]ElectionResult, len(r.Results))
		for i, p := range r.Results {
			out[i] = ElectionResult{Topic: p.Topic, Partition: p.Partition, Err: p.Error.Err("")}
		}
		return out, nil
	}
}
