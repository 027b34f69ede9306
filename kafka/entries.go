package kafka

import "github.com/twmb/franz-go/pkg/kmsg"

// A request's entries are what its handler fans out into separate asks of
// the broker: a partition of a produce or fetch, a topic to create, a
// group to describe. Each ask costs memory until it is answered, so a
// request has at most MaxRequestEntries of them, and each counts
// askBytes in the in-flight budget while its request is served.

// DefaultMaxRequestEntries bounds a request's entries unless the listener
// is given another limit.
const DefaultMaxRequestEntries = 10_000

// askBytes is what one ask of the broker holds while it waits (its reply
// address, its answer), counted in the budget.
const askBytes = 2 << 10

// entries counts the entries of req.
func entries(req kmsg.Request) int {
	n := 0
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	case *kmsg.FetchRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
		n += len(r.ForgottenTopics)
	case *kmsg.ListOffsetsRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	case *kmsg.OffsetCommitRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	case *kmsg.OffsetFetchRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
		for _, g := range r.Groups {
			n++
			for _, t := range g.Topics {
				n += len(t.Partitions)
			}
		}
	case *kmsg.OffsetDeleteRequest:
		for _, t := range r.Topics {
			n += len(t.Partitions)
		}
	case *kmsg.MetadataRequest:
		n = len(r.Topics)
	case *kmsg.CreateTopicsRequest:
		for _, t := range r.Topics {
			n += 1 + len(t.Configs) + len(t.ReplicaAssignment)
		}
	case *kmsg.DeleteTopicsRequest:
		n = len(r.Topics) + len(r.TopicNames)
	case *kmsg.CreatePartitionsRequest:
		n = len(r.Topics)
	case *kmsg.ElectLeadersRequest:
		for _, t := range r.Topics {
			n += 1 + len(t.Partitions)
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		for _, t := range r.Topics {
			n++
			for _, p := range t.Partitions {
				n += 1 + len(p.Replicas)
			}
		}
	case *kmsg.DescribeProducersRequest:
		for _, t := range r.Topics {
			n += 1 + len(t.Partitions)
		}
	case *kmsg.DescribeLogDirsRequest:
		for _, t := range r.Topics {
			n += 1 + len(t.Partitions)
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		for _, t := range r.Topics {
			n += 1 + len(t.Partitions)
		}
	case *kmsg.AlterConfigsRequest:
		for _, c := range r.Resources {
			n += 1 + len(c.Configs)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, c := range r.Resources {
			n += 1 + len(c.Configs)
		}
	case *kmsg.DescribeConfigsRequest:
		for _, c := range r.Resources {
			n += 1 + len(c.ConfigNames)
		}
	case *kmsg.FindCoordinatorRequest:
		n = len(r.CoordinatorKeys)
	case *kmsg.DescribeGroupsRequest:
		n = len(r.Groups)
	case *kmsg.DeleteGroupsRequest:
		n = len(r.Groups)
	case *kmsg.ListGroupsRequest:
		n = len(r.StatesFilter) + len(r.TypesFilter)
	case *kmsg.JoinGroupRequest:
		n = len(r.Protocols)
	case *kmsg.SyncGroupRequest:
		n = len(r.GroupAssignment)
	case *kmsg.LeaveGroupRequest:
		n = len(r.Members)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		n = len(r.SubscribedTopicNames)
		for _, t := range r.Topics {
			n += 1 + len(t.Partitions)
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		n = len(r.Groups)
	}
	return n
}
