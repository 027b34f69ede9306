package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Reassignment moves one partition to a replica set (Kafka's
// AlterPartitionReassignments): Replicas is the target, preferred leader
// first; nil cancels the partition's move in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
	// Throttle caps, in bytes per second, what the leader's broker sends
	// to the replicas this move adds, together with its other throttled
	// moves (Kafka's leader.replication.throttled.rate for a
	// reassignment); 0: as fast as they fetch. It ends with the move; a
	// move asked again with another throttle keeps going at the new one.
	Throttle int64
}

// PartitionResult is what a request did to one partition: Err is nil when
// it was done.
type PartitionResult struct {
	Topic     string
	Partition int32
	Err       error
}

// AlterPartitionReassignments starts moving partitions to new replica
// sets, as Kafka's reassignments: the new replicas join as followers and
// catch up, then the replicas that leave drop out (and their brokers
// delete their data); the leader moves if it leaves. A move that only
// takes replicas away completes at once when the rest are in sync. A
// result per partition: INVALID_REPLICA_ASSIGNMENT for a broker that is
// not live, named twice or a replica set of none,
// INVALID_REPLICATION_FACTOR for fewer replicas than the topic's
// min.insync.replicas, NO_REASSIGNMENT_IN_PROGRESS for a cancel of a
// partition that is not moving. With TLS it needs Alter on the cluster.
// ListPartitionReassignments tells when the moves are done.
func (a *Admin) AlterPartitionReassignments(ctx context.Context, moves ...Reassignment) ([]PartitionResult, error) {
	req := &messages.AlterPartitionReassignmentsRequest{}
	for _, m := range moves {
		req.Partitions = append(req.Partitions, &messages.PartitionReassignment{Topic: m.Topic, Partition: m.Partition,
			Replicas: m.Replicas, ThrottleBytesPerSec: m.Throttle})
	}
	r, err := callController(ctx, a, req, func(r *messages.AlterPartitionReassignmentsResponse) (messages.ErrorCode, string) {
		return r.Error, r.ErrorMessage
	})
	if err != nil {
		return nil, err
	}
	out := make([]PartitionResult, len(r.Results))
	for i, p := range r.Results {
		out[i] = PartitionResult{Topic: p.Topic, Partition: p.Partition, Err: p.Error.Err(p.ErrorMessage)}
	}
	return out, nil
}

// OngoingReassignment is a partition moving to another replica set:
// Replicas holds both sets (the target first), AddingReplicas those the
// move adds and RemovingReplicas those it takes away.
type OngoingReassignment struct {
	Topic            string
	Partition        int32
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// ListPartitionReassignments lists the moves in progress among the
// partitions of targets (every partition when none is given; every
// partition of a topic named without any). With TLS it needs Describe on
// the cluster.
func (a *Admin) ListPartitionReassignments(ctx context.Context, targets ...ElectionTarget) ([]OngoingReassignment, error) {
	req := &messages.ListPartitionReassignmentsRequest{}
	for _, t := range targets {
		req.Partitions = append(req.Partitions, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
	}
	r, err := callController(ctx, a, req, func(r *messages.ListPartitionReassignmentsResponse) (messages.ErrorCode, string) {
		return r.Error, r.ErrorMessage
	})
	if err != nil {
		return nil, err
	}
	out := make([]OngoingReassignment, len(r.Reassignments))
	for i, m := range r.Reassignments {
		out[i] = OngoingReassignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas,
			AddingReplicas: m.AddingReplicas, RemovingReplicas: m.RemovingReplicas}
	}
	return out, nil
}

// callController sends req to any broker and returns its answer, asking
// again while the cluster has no controller (NOT_CONTROLLER: starting,
// or electing one); errOf reads the answer's error for the whole request.
func callController[R proto.Message](ctx context.Context, a *Admin, req proto.Message, errOf func(R) (messages.ErrorCode, string)) (R, error) {
	var zero R
	backoff := 50 * time.Millisecond
	for {
		res, err := a.callAny(ctx, req)
		if err != nil {
			return zero, err
		}
		r, ok := res.(R)
		if !ok {
			return zero, fmt.Errorf("unexpected answer %T", res)
		}
		code, text := errOf(r)
		if code == messages.ErrorCode_NOT_CONTROLLER {
			select {
			case <-ctx.Done():
				return zero, code.Err(text)
			case <-time.After(backoff):
				backoff = min(2*backoff, time.Second)
				continue
			}
		}
		if err := code.Err(text); err != nil {
			return zero, err
		}
		return r, nil
	}
}
