package controller

import (
	"reflect"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
)

// The requests that write the metadata, one entry per message type: each
// waits while a store step is out (beside.go), then its handler plans it
// and answers its sender; fail is its answer when the controller refuses
// it with an error or stops before it is done.

// change is one entry of the table.
type change struct {
	serve func(c *controllerActor, ctx actor.Context, msg proto.Message)
	fail  func(msg proto.Message, code messages.ErrorCode, text string) proto.Message
}

// changeEntry builds the entry of requests of type M.
func changeEntry[M proto.Message](serve func(*controllerActor, actor.Context, M), fail func(M, messages.ErrorCode, string) proto.Message) change {
	return change{
		serve: func(c *controllerActor, ctx actor.Context, m proto.Message) { serve(c, ctx, m.(M)) },
		fail: func(m proto.Message, code messages.ErrorCode, text string) proto.Message {
			return fail(m.(M), code, text)
		},
	}
}

var changes = map[reflect.Type]change{
	reflect.TypeFor[*messages.AlterPartitionRequest](): changeEntry(admitted((*controllerActor).onAlterPartition),
		func(_ *messages.AlterPartitionRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.AlterPartitionResponse{Error: code, ErrorMessage: text}
		}),
	reflect.TypeFor[*messages.AllocateProducerIdsRequest](): changeEntry(admitted((*controllerActor).onAllocateProducerIDs),
		func(_ *messages.AllocateProducerIdsRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.AllocateProducerIdsResponse{Error: code, ErrorMessage: text}
		}),
	reflect.TypeFor[*messages.CreateTopicsRequest](): changeEntry((*controllerActor).onCreateTopics,
		func(m *messages.CreateTopicsRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.CreateTopicsResponse{Results: actors.TopicResults(actors.CreateTopicsNames(m), code, text)}
		}),
	reflect.TypeFor[*messages.DeleteTopicsRequest](): changeEntry((*controllerActor).onDeleteTopics,
		func(m *messages.DeleteTopicsRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.DeleteTopicsResponse{Results: actors.TopicResults(m.Names, code, text)}
		}),
	reflect.TypeFor[*messages.AlterTopicConfigsRequest](): changeEntry((*controllerActor).onAlterTopicConfigs,
		func(m *messages.AlterTopicConfigsRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.AlterTopicConfigsResponse{Results: actors.TopicResults(actors.AlterConfigsNames(m), code, text)}
		}),
	reflect.TypeFor[*messages.CreatePartitionsRequest](): changeEntry((*controllerActor).onCreatePartitions,
		func(m *messages.CreatePartitionsRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.CreatePartitionsResponse{Results: actors.TopicResults(actors.CreatePartitionsNames(m), code, text)}
		}),
	reflect.TypeFor[*messages.ElectLeadersRequest](): changeEntry((*controllerActor).onElectLeaders,
		func(_ *messages.ElectLeadersRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.ElectLeadersResponse{Error: code, ErrorMessage: text}
		}),
	reflect.TypeFor[*messages.AlterPartitionReassignmentsRequest](): changeEntry((*controllerActor).onAlterPartitionReassignments,
		func(_ *messages.AlterPartitionReassignmentsRequest, code messages.ErrorCode, text string) proto.Message {
			return &messages.AlterPartitionReassignmentsResponse{Error: code, ErrorMessage: text}
		}),
	reflect.TypeFor[*messages.CreateAclsRequest]():            securityEntry[*messages.CreateAclsRequest](),
	reflect.TypeFor[*messages.DeleteAclsRequest]():            securityEntry[*messages.DeleteAclsRequest](),
	reflect.TypeFor[*messages.CreateUserRequest]():            securityEntry[*messages.CreateUserRequest](),
	reflect.TypeFor[*messages.DeleteUserRequest]():            securityEntry[*messages.DeleteUserRequest](),
	reflect.TypeFor[*messages.AlterScramCredentialsRequest](): securityEntry[*messages.AlterScramCredentialsRequest](),
	reflect.TypeFor[*messages.AlterClientQuotasRequest]():     securityEntry[*messages.AlterClientQuotasRequest](),
	reflect.TypeFor[*messages.AlterBrokerConfigsRequest]():    securityEntry[*messages.AlterBrokerConfigsRequest](),
}

// admitted serves a request a broker sends about itself only when it
// comes from that broker (admit answers the refusal).
func admitted[M interface {
	proto.Message
	GetBrokerId() int32
}](serve func(*controllerActor, actor.Context, M)) func(*controllerActor, actor.Context, M) {
	return func(c *controllerActor, ctx actor.Context, m M) {
		if c.admit(ctx, m.GetBrokerId()) {
			serve(c, ctx, m)
		}
	}
}

// securityEntry is the entry of a change to the ACLs or users.
func securityEntry[M proto.Message]() change {
	return changeEntry(func(c *controllerActor, ctx actor.Context, m M) { c.onSecurityChange(ctx, m) },
		func(m M, code messages.ErrorCode, text string) proto.Message {
			return changeOf(m, time.Time{}).fail(code, text)
		})
}

// failureOf is the answer to a request that writes the metadata that
// refuses it with code.
func failureOf(msg any, code messages.ErrorCode, text string) proto.Message {
	if ch, ok := changes[reflect.TypeOf(msg)]; ok {
		return ch.fail(msg.(proto.Message), code, text)
	}
	return &messages.ErrorResponse{Error: code, Message: text}
}
