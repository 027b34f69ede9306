package broker

import (
	"reflect"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// The client and replication requests the broker actor serves, one entry
// per message type: the error answer it gets, what the sender must be
// allowed (checked first; a refusal is answered with that error), and the
// handler. Group requests go to their coordinator (see routeGroup);
// everything else the actor receives is its own machinery (Receive).

// failFunc builds a request's error answer.
type failFunc func(code messages.ErrorCode, text string) proto.Message

// request is one entry of the table.
type request struct {
	// fail returns the request's error answer builder (nil: never answered
	// with an error).
	fail func(msg proto.Message) failFunc
	// allowed checks the sender and answers the refusal when it is not
	// (nil: anyone may send it).
	allowed func(b *brokerActor, ctx actor.Context, msg proto.Message, fail failFunc) bool
	serve   func(b *brokerActor, ctx actor.Context, msg proto.Message, fail failFunc)
}

// handle serves msg when its type is in the table.
func (b *brokerActor) handle(ctx actor.Context, msg any) bool {
	r, ok := requests[reflect.TypeOf(msg)]
	if !ok {
		return false
	}
	m := msg.(proto.Message)
	var fail failFunc
	if r.fail != nil {
		fail = r.fail(m)
	}
	if r.allowed == nil || r.allowed(b, ctx, m, fail) {
		r.serve(b, ctx, m, fail)
	}
	return true
}

// entry builds a table entry for requests of type M; fail and allowed may
// be nil.
func entry[M proto.Message](fail func(M) failFunc, allowed func(*brokerActor, actor.Context, M, failFunc) bool,
	serve func(*brokerActor, actor.Context, M, failFunc)) request {
	r := request{serve: func(b *brokerActor, ctx actor.Context, m proto.Message, f failFunc) { serve(b, ctx, m.(M), f) }}
	if fail != nil {
		r.fail = func(m proto.Message) failFunc { return fail(m.(M)) }
	}
	if allowed != nil {
		r.allowed = func(b *brokerActor, ctx actor.Context, m proto.Message, f failFunc) bool {
			return allowed(b, ctx, m.(M), f)
		}
	}
	return r
}

// typeOf is the table's key of M.
func typeOf[M proto.Message]() reflect.Type { return reflect.TypeFor[M]() }

// partitionRequest is a request for one partition, served by its replica.
type partitionRequest interface {
	proto.Message
	GetTopic() string
	GetPartition() int32
}

// toReplica routes a partition request to the local replica.
func toReplica[M partitionRequest](b *brokerActor, ctx actor.Context, m M, fail failFunc) {
	b.route(ctx, m.GetTopic(), m.GetPartition(), fail)
}

// toController forwards a request to the controller.
func toController[M proto.Message](b *brokerActor, ctx actor.Context, _ M, fail failFunc) {
	b.forwardToController(ctx, fail)
}

// fromOwnReplica is the entry of a request a replica sends the controller
// about itself, through its broker: it goes on only if it names that
// broker (fromOwnPartition), and is refused with fail otherwise.
func fromOwnReplica[M interface {
	proto.Message
	GetBrokerId() int32
}](fail failFunc) request {
	return entry(func(M) failFunc { return fail },
		func(b *brokerActor, ctx actor.Context, m M, fail failFunc) bool {
			return b.fromOwnPartition(ctx, m.GetBrokerId(), fail)
		},
		toController[M])
}

// mayOnTopic allows a partition request of a sender allowed op on its topic.
func mayOnTopic[M partitionRequest](op messages.AclOperation) func(*brokerActor, actor.Context, M, failFunc) bool {
	return func(b *brokerActor, ctx actor.Context, m M, fail failFunc) bool {
		return b.permit(ctx, fail, onTopic(op, m.GetTopic()))
	}
}

// mayOnTopics allows a topic-admin request of a sender allowed op on every
// topic it names.
func mayOnTopics[M proto.Message](op messages.AclOperation, names func(M) []string) func(*brokerActor, actor.Context, M, failFunc) bool {
	return func(b *brokerActor, ctx actor.Context, m M, fail failFunc) bool {
		return b.permitTopics(ctx, names(m), op, fail)
	}
}

// failTopics answers a topic-admin request with an error for every topic.
func failTopics[M proto.Message](answer func(results []*messages.TopicResult) proto.Message, names func(M) []string) func(M) failFunc {
	return func(m M) failFunc {
		return func(code messages.ErrorCode, text string) proto.Message {
			return answer(actors.TopicResults(names(m), code, text))
		}
	}
}

// securityChange is an ACL or user change: b.securityChange checks and
// forwards it.
func securityChange[M proto.Message](answer func(code messages.ErrorCode, text string) proto.Message) request {
	return entry(func(M) failFunc { return answer }, nil,
		func(b *brokerActor, ctx actor.Context, _ M, fail failFunc) { b.securityChange(ctx, fail) })
}

// securityRead is an ACL or user listing, allowed by b.securityRead.
func securityRead[M proto.Message](answer func(code messages.ErrorCode, text string) proto.Message, serve func(*brokerActor, actor.Context, M)) request {
	return entry(func(M) failFunc { return answer },
		func(b *brokerActor, ctx actor.Context, _ M, fail failFunc) bool { return b.securityRead(ctx, fail) },
		func(b *brokerActor, ctx actor.Context, m M, _ failFunc) { serve(b, ctx, m) })
}

// plain adapts a handler that needs no error answer.
func plain[M proto.Message](serve func(*brokerActor, actor.Context, M)) func(*brokerActor, actor.Context, M, failFunc) {
	return func(b *brokerActor, ctx actor.Context, m M, _ failFunc) { serve(b, ctx, m) }
}

// onClusterEntry is the entry of a request that needs op on the cluster,
// answered fail's way when refused.
func onClusterEntry[M proto.Message](op messages.AclOperation, fail failFunc, serve func(*brokerActor, actor.Context, M, failFunc)) request {
	return entry(func(M) failFunc { return fail },
		func(b *brokerActor, ctx actor.Context, _ M, f failFunc) bool { return b.permit(ctx, f, onCluster(op)) },
		serve)
}

var requests = map[reflect.Type]request{
	// Data: to the partition's replica, with Write or Read on its topic.
	typeOf[*messages.ProduceRequest](): entry(
		func(m *messages.ProduceRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.ProduceResponse{Topic: m.Topic, Partition: m.Partition, Error: code, ErrorMessage: text, BaseOffset: -1}
			}
		},
		func(b *brokerActor, ctx actor.Context, m *messages.ProduceRequest, fail failFunc) bool {
			if !b.permit(ctx, fail, onTopic(opWrite, m.Topic)) {
				return false
			}
			if m.Topic == actors.OffsetsTopic && transport.FromNetwork(ctx) {
				// Only the group coordinators of this broker write it.
				actors.Respond(ctx, fail(messages.ErrorCode_INVALID_TOPIC, "the internal topic "+actors.OffsetsTopic+" cannot be produced to"))
				return false
			}
			return true
		},
		toReplica[*messages.ProduceRequest]),
	typeOf[*messages.FetchRequest](): entry(
		func(m *messages.FetchRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.FetchResponse{Topic: m.Topic, Partition: m.Partition, Error: code, ErrorMessage: text, HighWatermark: -1, LogStartOffset: -1}
			}
		},
		mayOnTopic[*messages.FetchRequest](opRead), toReplica[*messages.FetchRequest]),
	typeOf[*messages.ListOffsetsRequest](): entry(
		func(m *messages.ListOffsetsRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.ListOffsetsResponse{Topic: m.Topic, Partition: m.Partition, Error: code, ErrorMessage: text, Offset: -1, Timestamp: -1}
			}
		},
		mayOnTopic[*messages.ListOffsetsRequest](opRead), toReplica[*messages.ListOffsetsRequest]),

	typeOf[*messages.DescribeProducersRequest](): entry(
		func(m *messages.DescribeProducersRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.DescribeProducersResponse{Topic: m.Topic, Partition: m.Partition, Error: code, ErrorMessage: text}
			}
		},
		mayOnTopic[*messages.DescribeProducersRequest](opRead), toReplica[*messages.DescribeProducersRequest]),

	// Replication: from the broker the request names.
	typeOf[*messages.ReplicaFetchRequest](): entry(
		func(m *messages.ReplicaFetchRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.ReplicaFetchResponse{Topic: m.Topic, Partition: m.Partition, Error: code, ErrorMessage: text,
					HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1, LeaderEpoch: -1}
			}
		},
		func(b *brokerActor, ctx actor.Context, m *messages.ReplicaFetchRequest, fail failFunc) bool {
			return b.fromFollower(ctx, m.ReplicaId, fail)
		},
		toReplica[*messages.ReplicaFetchRequest]),
	typeOf[*messages.OffsetForLeaderEpochRequest](): entry(
		func(m *messages.OffsetForLeaderEpochRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.OffsetForLeaderEpochResponse{Topic: m.Topic, Partition: m.Partition, Error: code, ErrorMessage: text, Epoch: -1, EndOffset: -1}
			}
		},
		func(b *brokerActor, ctx actor.Context, m *messages.OffsetForLeaderEpochRequest, fail failFunc) bool {
			if m.ReplicaId < 0 {
				// A consumer checking for truncation (the Kafka listener's).
				return b.permit(ctx, fail, onTopic(opRead, m.Topic))
			}
			return b.fromFollower(ctx, m.ReplicaId, fail)
		},
		toReplica[*messages.OffsetForLeaderEpochRequest]),
	typeOf[*messages.AlterPartitionRequest](): fromOwnReplica[*messages.AlterPartitionRequest](
		func(code messages.ErrorCode, text string) proto.Message {
			return &messages.AlterPartitionResponse{Error: code, ErrorMessage: text}
		}),
	typeOf[*messages.ReplicaOfflineRequest](): fromOwnReplica[*messages.ReplicaOfflineRequest](
		func(code messages.ErrorCode, text string) proto.Message {
			return &messages.ReplicaOfflineResponse{Error: code, ErrorMessage: text}
		}),
	typeOf[*messages.BrokerPingRequest](): entry(nil, nil, plain((*brokerActor).onBrokerPing)),
	// Checked by onLeaderAndIsr itself (the sender must be the controller).
	typeOf[*messages.LeaderAndIsrRequest](): entry(nil, nil, plain((*brokerActor).onLeaderAndIsr)),

	// Metadata and topic administration, the latter forwarded to the
	// controller.
	typeOf[*messages.MetadataRequest]():         entry(nil, nil, plain((*brokerActor).onMetadataRequest)),
	typeOf[*messages.DescribeReplicasRequest](): entry(nil, nil, plain((*brokerActor).onDescribeReplicas)),
	typeOf[*messages.CreateTopicsRequest](): entry(
		failTopics(func(r []*messages.TopicResult) proto.Message { return &messages.CreateTopicsResponse{Results: r} }, actors.CreateTopicsNames),
		mayOnTopics(opCreate, actors.CreateTopicsNames), toController[*messages.CreateTopicsRequest]),
	typeOf[*messages.DeleteTopicsRequest](): entry(
		failTopics(func(r []*messages.TopicResult) proto.Message { return &messages.DeleteTopicsResponse{Results: r} }, (*messages.DeleteTopicsRequest).GetNames),
		mayOnTopics(opDelete, (*messages.DeleteTopicsRequest).GetNames), toController[*messages.DeleteTopicsRequest]),
	typeOf[*messages.AlterTopicConfigsRequest](): entry(
		failTopics(func(r []*messages.TopicResult) proto.Message { return &messages.AlterTopicConfigsResponse{Results: r} }, actors.AlterConfigsNames),
		mayOnTopics(opAlterConfigs, actors.AlterConfigsNames), toController[*messages.AlterTopicConfigsRequest]),
	typeOf[*messages.CreatePartitionsRequest](): entry(
		failTopics(func(r []*messages.TopicResult) proto.Message { return &messages.CreatePartitionsResponse{Results: r} }, actors.CreatePartitionsNames),
		mayOnTopics(opAlter, actors.CreatePartitionsNames), toController[*messages.CreatePartitionsRequest]),
	typeOf[*messages.ElectLeadersRequest](): onClusterEntry(opAlter, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.ElectLeadersResponse{Error: code, ErrorMessage: text}
	}, toController[*messages.ElectLeadersRequest]),
	typeOf[*messages.AlterPartitionReassignmentsRequest](): onClusterEntry(opAlter, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.AlterPartitionReassignmentsResponse{Error: code, ErrorMessage: text}
	}, toController[*messages.AlterPartitionReassignmentsRequest]),
	typeOf[*messages.AlterBrokerConfigsRequest](): onClusterEntry(opAlterConfigs, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.AlterBrokerConfigsResponse{Error: code, ErrorMessage: text}
	}, (*brokerActor).onAlterBrokerConfigs),
	typeOf[*messages.AlterClientQuotasRequest](): onClusterEntry(opAlterConfigs, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.AlterClientQuotasResponse{Error: code, ErrorMessage: text}
	}, (*brokerActor).onAlterClientQuotas),
	typeOf[*messages.DescribeTopicConfigsRequest](): entry(
		func(m *messages.DescribeTopicConfigsRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				resp := &messages.DescribeTopicConfigsResponse{}
				for _, name := range m.Topics {
					resp.Topics = append(resp.Topics, &messages.TopicConfigs{Name: name, Error: code, ErrorMessage: text})
				}
				return resp
			}
		}, nil, plain((*brokerActor).onDescribeTopicConfigs)),
	typeOf[*messages.DescribeBrokerConfigsRequest](): onClusterEntry(opDescribeConfigs, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.DescribeBrokerConfigsResponse{Error: code, ErrorMessage: text}
	}, (*brokerActor).onDescribeBrokerConfigs),
	typeOf[*messages.ListClientQuotasRequest](): onClusterEntry(opDescribeConfigs, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.ListClientQuotasResponse{Error: code, ErrorMessage: text}
	}, (*brokerActor).onListClientQuotas),
	typeOf[*messages.DescribeLogDirsRequest](): onClusterEntry(opDescribe, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.DescribeLogDirsResponse{Error: code, ErrorMessage: text}
	}, plain((*brokerActor).onDescribeLogDirs)),
	typeOf[*messages.ListPartitionReassignmentsRequest](): onClusterEntry(opDescribe, func(code messages.ErrorCode, text string) proto.Message {
		return &messages.ListPartitionReassignmentsResponse{Error: code, ErrorMessage: text}
	}, plain((*brokerActor).onListPartitionReassignments)),

	// Groups and producers.
	typeOf[*messages.FindCoordinatorRequest](): entry(
		func(*messages.FindCoordinatorRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.FindCoordinatorResponse{Error: code, ErrorMessage: text, BrokerId: -1}
			}
		},
		func(b *brokerActor, ctx actor.Context, m *messages.FindCoordinatorRequest, fail failFunc) bool {
			return b.permit(ctx, fail, onGroup(opDescribe, m.Group))
		},
		plain((*brokerActor).onFindCoordinator)),
	typeOf[*messages.ListGroupsRequest](): entry(nil, nil, func(b *brokerActor, ctx actor.Context, _ *messages.ListGroupsRequest, _ failFunc) {
		b.onListGroups(ctx)
	}),
	typeOf[*messages.InitProducerIdRequest](): entry(
		func(*messages.InitProducerIdRequest) failFunc {
			return func(code messages.ErrorCode, text string) proto.Message {
				return &messages.InitProducerIdResponse{Error: code, ErrorMessage: text, ProducerId: -1, ProducerEpoch: -1}
			}
		},
		func(b *brokerActor, ctx actor.Context, _ *messages.InitProducerIdRequest, fail failFunc) bool {
			if why := b.mayInitProducerID(ctx); why != "" {
				actors.Respond(ctx, fail(messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED, why))
				return false
			}
			return true
		},
		plain((*brokerActor).onInitProducerID)),

	// Security.
	typeOf[*messages.WhoAmIRequest](): entry(nil, nil, func(b *brokerActor, ctx actor.Context, _ *messages.WhoAmIRequest, _ failFunc) {
		b.onWhoAmI(ctx)
	}),
	typeOf[*messages.CreateAclsRequest](): securityChange[*messages.CreateAclsRequest](func(c messages.ErrorCode, t string) proto.Message {
		return &messages.CreateAclsResponse{Error: c, ErrorMessage: t}
	}),
	typeOf[*messages.DeleteAclsRequest](): securityChange[*messages.DeleteAclsRequest](func(c messages.ErrorCode, t string) proto.Message {
		return &messages.DeleteAclsResponse{Error: c, ErrorMessage: t}
	}),
	typeOf[*messages.CreateUserRequest](): securityChange[*messages.CreateUserRequest](func(c messages.ErrorCode, t string) proto.Message {
		return &messages.CreateUserResponse{Error: c, ErrorMessage: t}
	}),
	typeOf[*messages.DeleteUserRequest](): securityChange[*messages.DeleteUserRequest](func(c messages.ErrorCode, t string) proto.Message {
		return &messages.DeleteUserResponse{Error: c, ErrorMessage: t}
	}),
	typeOf[*messages.AlterScramCredentialsRequest](): securityChange[*messages.AlterScramCredentialsRequest](func(c messages.ErrorCode, t string) proto.Message {
		return &messages.AlterScramCredentialsResponse{Error: c, ErrorMessage: t}
	}),
	typeOf[*messages.DescribeAclsRequest](): securityRead(func(c messages.ErrorCode, t string) proto.Message {
		return &messages.DescribeAclsResponse{Error: c, ErrorMessage: t}
	}, (*brokerActor).describeACLs),
	typeOf[*messages.ListUsersRequest](): securityRead(func(c messages.ErrorCode, t string) proto.Message {
		return &messages.ListUsersResponse{Error: c, ErrorMessage: t}
	}, func(b *brokerActor, ctx actor.Context, _ *messages.ListUsersRequest) { b.listUsers(ctx) }),
}
