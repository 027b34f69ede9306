package broker

import (
	"fmt"
	"maps"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/coordinator"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/transport"
)

// Operations, shortened for the checks below.
const (
	opRead            = messages.AclOperation_ACL_OPERATION_READ
	opWrite           = messages.AclOperation_ACL_OPERATION_WRITE
	opCreate          = messages.AclOperation_ACL_OPERATION_CREATE
	opDelete          = messages.AclOperation_ACL_OPERATION_DELETE
	opAlter           = messages.AclOperation_ACL_OPERATION_ALTER
	opDescribe        = messages.AclOperation_ACL_OPERATION_DESCRIBE
	opAlterConfigs    = messages.AclOperation_ACL_OPERATION_ALTER_CONFIGS
	opDescribeConfigs = messages.AclOperation_ACL_OPERATION_DESCRIBE_CONFIGS
	opIdempotentWrite = messages.AclOperation_ACL_OPERATION_IDEMPOTENT_WRITE
)

// access is one thing a request needs to be allowed.
type access struct {
	op   messages.AclOperation
	rt   messages.AclResourceType
	name string
}

func onTopic(op messages.AclOperation, topic string) access {
	return access{op, messages.AclResourceType_ACL_RESOURCE_TOPIC, topic}
}

func onGroup(op messages.AclOperation, group string) access {
	return access{op, messages.AclResourceType_ACL_RESOURCE_GROUP, group}
}

func onCluster(op messages.AclOperation) access {
	return access{op, messages.AclResourceType_ACL_RESOURCE_CLUSTER, acl.ClusterName}
}

// deniedCode is the error a refusal on a resource type answers with.
func deniedCode(rt messages.AclResourceType) messages.ErrorCode {
	switch rt {
	case messages.AclResourceType_ACL_RESOURCE_TOPIC:
		return messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED
	case messages.AclResourceType_ACL_RESOURCE_GROUP:
		return messages.ErrorCode_GROUP_AUTHORIZATION_FAILED
	}
	return messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED
}

// authorizer is the ACL state of one metadata snapshot.
type authorizer struct {
	version uint64
	acl     *acl.Authorizer
}

// onSecurity rebuilds the authorizer, the token table and what follows
// the dynamic broker settings when the security record of the metadata
// changed, reporting whether the defaults of topic configs moved.
func (b *brokerActor) onSecurity(snap *cluster.Snapshot) (topicDefaultsMoved bool) {
	if b.authz != nil && b.authz.version == snap.SecurityVersion {
		return false
	}
	var bindings []*messages.AclBinding
	if snap.Security != nil {
		bindings = snap.Security.Acls
	}
	b.authz = &authorizer{version: snap.SecurityVersion, acl: acl.New(bindings, b.cfg.SuperUsers)}
	if snap.Security != nil {
		b.cfg.ProducerIDs.SetKey(snap.Security.ProducerIdKey)
	}
	if b.cfg.ACLs != nil {
		b.cfg.ACLs.Store(b.authz.acl)
	}
	if b.cfg.Tokens != nil {
		b.cfg.Tokens.Set(snap.Security)
	}
	if b.cfg.Quotas != nil {
		b.cfg.Quotas.Store(acl.QuotasOf(snap.Security))
	}
	dynamic := brokerconfig.For(snap.Security, b.cfg.ID)
	if b.cfg.DynamicConfigs != nil {
		b.cfg.DynamicConfigs.Store(&dynamic)
	}
	defaults := actors.TopicDefaults(b.cfg.DefaultTopic, dynamic)
	moved := defaults != b.topicDefaults
	b.topicDefaults = defaults
	return moved
}

// dynamicConfigs is the dynamic broker settings in force for this broker.
func (b *brokerActor) dynamicConfigs() brokerconfig.Values {
	if b.meta == nil {
		return brokerconfig.For(nil, b.cfg.ID)
	}
	return brokerconfig.For(b.meta.Security, b.cfg.ID)
}

// validateHere answers a change that only validates with check's answer
// over this broker's security record, and has the controller make any
// other change.
func (b *brokerActor) validateHere(ctx actor.Context, validateOnly bool, fail failFunc, check func(*messages.SecurityRecord) proto.Message) {
	switch {
	case !validateOnly:
		b.forwardToController(ctx, fail)
	case b.meta == nil:
		actors.Respond(ctx, fail(messages.ErrorCode_LEADER_NOT_AVAILABLE, "broker is starting"))
	default:
		actors.Respond(ctx, check(b.meta.Security))
	}
}

func (b *brokerActor) onAlterBrokerConfigs(ctx actor.Context, m *messages.AlterBrokerConfigsRequest, fail failFunc) {
	b.validateHere(ctx, m.ValidateOnly, fail, func(rec *messages.SecurityRecord) proto.Message {
		if _, err := actors.ApplyBrokerConfigs(rec, m); err != nil {
			return fail(messages.ErrorCode_INVALID_CONFIG, err.Error())
		}
		return &messages.AlterBrokerConfigsResponse{}
	})
}

func (b *brokerActor) onAlterClientQuotas(ctx actor.Context, m *messages.AlterClientQuotasRequest, fail failFunc) {
	b.validateHere(ctx, m.ValidateOnly, fail, func(rec *messages.SecurityRecord) proto.Message {
		_, results := acl.AlterQuotas(rec, m.Entries)
		return &messages.AlterClientQuotasResponse{Results: results}
	})
}

// onDescribeTopicConfigs answers each topic's own configuration, or why
// not: DescribeConfigs on the topic first (as Kafka: a topic one may not
// see is not told to exist), then whether it exists.
func (b *brokerActor) onDescribeTopicConfigs(ctx actor.Context, m *messages.DescribeTopicConfigsRequest) {
	resp := &messages.DescribeTopicConfigsResponse{}
	for _, name := range m.Topics {
		tc := &messages.TopicConfigs{Name: name}
		var t *messages.TopicRecord
		if b.meta != nil {
			t = b.meta.Topics[name]
		}
		switch why := b.may(ctx, onTopic(opDescribeConfigs, name)); {
		case why != "":
			tc.Error, tc.ErrorMessage = messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED, why
		case t == nil:
			tc.Error = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION
		default:
			tc.Configs = maps.Clone(t.Configs)
		}
		resp.Topics = append(resp.Topics, tc)
	}
	actors.Respond(ctx, resp)
}

func (b *brokerActor) onDescribeBrokerConfigs(ctx actor.Context, _ *messages.DescribeBrokerConfigsRequest, fail failFunc) {
	if b.meta == nil {
		actors.Respond(ctx, fail(messages.ErrorCode_LEADER_NOT_AVAILABLE, "broker is starting"))
		return
	}
	resp := &messages.DescribeBrokerConfigsResponse{Dynamic: brokerconfig.Names()}
	for _, o := range b.meta.Security.GetBrokerConfigs() {
		resp.Configs = append(resp.Configs, proto.CloneOf(o))
	}
	actors.Respond(ctx, resp)
}

func (b *brokerActor) onListClientQuotas(ctx actor.Context, _ *messages.ListClientQuotasRequest, fail failFunc) {
	if b.meta == nil {
		actors.Respond(ctx, fail(messages.ErrorCode_LEADER_NOT_AVAILABLE, "broker is starting"))
		return
	}
	actors.Respond(ctx, &messages.ListClientQuotasResponse{Quotas: b.meta.Security.GetQuotas()})
}

// checked returns the principal whose ACLs the current message is subject
// to, or "" when it is not: without TLS, from this process (the broker's
// own actors and users' actors running in it), from a broker, or from a
// super user.
func (b *brokerActor) checked(ctx actor.Context) string {
	return transport.CheckedPrincipal(transport.Principal(ctx), b.cfg.Secure, b.cfg.SuperUsers)
}

// may says why the sender may not have a ("" when it may).
func (b *brokerActor) may(ctx actor.Context, a access) string {
	p := b.checked(ctx)
	switch {
	case p == "":
		return ""
	case b.authz == nil:
		// No metadata yet, so no ACLs: nothing is allowed.
		return "the broker has not loaded the cluster's ACLs yet"
	}
	return b.authz.acl.Why(p, a.op, a.rt, a.name)
}

// permit answers fail with the refusal and returns false unless the sender
// may have every one of needs.
func (b *brokerActor) permit(ctx actor.Context, fail func(messages.ErrorCode, string) proto.Message, needs ...access) bool {
	for _, a := range needs {
		if why := b.may(ctx, a); why != "" {
			code, request := deniedCode(a.rt), fmt.Sprintf("%T", ctx.Message())
			if m, ok := ctx.Message().(proto.Message); ok {
				request = string(proto.MessageName(m).Name())
			}
			b.cfg.Metrics.RequestError(request, code)
			b.logRefusal("refused a request", "request", request, "error", code.String(), "reason", why,
				"principal", transport.Principal(ctx), "peer", ctx.MessageHeader().Get(transport.PeerHeader))
			if answer := fail(code, why); answer != nil { // PushCredit has no answer
				actors.Respond(ctx, answer)
			}
			return false
		}
	}
	return true
}

// permitGroup checks a group request: Describe to describe a group, Delete
// to delete one or some of its offsets (with Read on their topics), Read
// for everything else (joining, committing, fetching offsets, push
// credit), Read on the topics a push subscriber subscribes to or a commit
// names, since the broker reads and commits them on its behalf, and
// Describe on the topics a consumer-protocol member subscribes to.
func (b *brokerActor) permitGroup(ctx actor.Context, group string) bool {
	needs := []access{onGroup(opRead, group)}
	switch m := ctx.Message().(type) {
	case *messages.DescribeGroupRequest:
		needs = []access{onGroup(opDescribe, group)}
	case *messages.DeleteGroupRequest:
		needs = []access{onGroup(opDelete, group)}
	case *messages.DeleteOffsetsRequest:
		needs = []access{onGroup(opDelete, group)}
		for _, tps := range m.Partitions {
			needs = append(needs, onTopic(opRead, tps.Topic))
		}
	case *messages.SubscribeRequest:
		for _, t := range m.Topics {
			needs = append(needs, onTopic(opRead, t))
		}
	case *messages.ConsumerGroupHeartbeatRequest:
		// As Kafka: a member may not learn of topics it cannot describe
		// by subscribing to them.
		for _, t := range m.Topics {
			needs = append(needs, onTopic(opDescribe, t))
		}
	case *messages.OffsetCommitRequest:
		for _, e := range m.Offsets {
			needs = append(needs, onTopic(opRead, e.Topic))
		}
	}
	return b.permit(ctx, func(code messages.ErrorCode, text string) proto.Message {
		return coordinator.GroupError(ctx.Message(), code, text)
	}, needs...)
}

// mayInitProducerID: Kafka's rule since 2.8, IdempotentWrite on the
// cluster or Write on any topic.
func (b *brokerActor) mayInitProducerID(ctx actor.Context) string {
	why := b.may(ctx, onCluster(opIdempotentWrite))
	if why == "" || b.meta == nil {
		return why
	}
	for name := range b.meta.Topics {
		if b.may(ctx, onTopic(opWrite, name)) == "" {
			return ""
		}
	}
	return fmt.Sprintf("%s; nor does any ACL allow WRITE on a topic", why)
}

// fromBroker reports whether the current message comes from this process
// or, with TLS, from a connection authenticated as broker id (any broker
// for id -1). Without TLS it cannot tell: ok is false and the caller
// checks the sender's address instead.
func (b *brokerActor) fromBroker(ctx actor.Context, id int32) (from bool, ok bool) {
	p := transport.Principal(ctx)
	switch {
	case p == "":
		return true, true
	case !b.cfg.Secure:
		return false, false
	case id < 0:
		return transport.IsBrokerPrincipal(p), true
	}
	return p == transport.BrokerPrincipal(id), true
}

// onWhoAmI tells a client which principal the broker sees.
func (b *brokerActor) onWhoAmI(ctx actor.Context) {
	p := transport.Principal(ctx)
	resp := &messages.WhoAmIResponse{Principal: p, Authorizer: b.cfg.Secure}
	if b.authz != nil {
		resp.SuperUser = b.authz.acl.IsSuperUser(p)
	}
	actors.Respond(ctx, resp)
}

// securityDisabled answers an ACL or user request on a broker without TLS.
const securityDisabled = "ACLs and users need brokers started with --tls-cert, --tls-key and --tls-ca"

// securityChange forwards an ACL or user change to the controller, which
// writes it to the metadata store; it needs Alter on the cluster.
func (b *brokerActor) securityChange(ctx actor.Context, fail func(messages.ErrorCode, string) proto.Message) {
	switch {
	case !b.cfg.Secure:
		actors.Respond(ctx, fail(messages.ErrorCode_SECURITY_DISABLED, securityDisabled))
	case b.permit(ctx, fail, onCluster(opAlter)):
		b.forwardToController(ctx, fail)
	}
}

// securityRead reports whether an ACL or user listing may be answered from
// this broker's metadata (it needs Describe on the cluster), answering the
// refusal otherwise.
func (b *brokerActor) securityRead(ctx actor.Context, fail func(messages.ErrorCode, string) proto.Message) bool {
	switch {
	case !b.cfg.Secure:
		actors.Respond(ctx, fail(messages.ErrorCode_SECURITY_DISABLED, securityDisabled))
	case !b.permit(ctx, fail, onCluster(opDescribe)):
	case b.meta == nil:
		actors.Respond(ctx, fail(messages.ErrorCode_LEADER_NOT_AVAILABLE, "broker is starting"))
	default:
		return true
	}
	return false
}

func (b *brokerActor) describeACLs(ctx actor.Context, req *messages.DescribeAclsRequest) {
	filter := req.Filter
	if filter == nil {
		filter = &messages.AclBinding{}
	}
	f, err := acl.ValidateFilter(filter)
	if err != nil {
		actors.Respond(ctx, &messages.DescribeAclsResponse{Error: messages.ErrorCode_INVALID_REQUEST, ErrorMessage: err.Error()})
		return
	}
	actors.Respond(ctx, &messages.DescribeAclsResponse{Acls: acl.ListACLs(b.meta.Security, f)})
}

func (b *brokerActor) listUsers(ctx actor.Context) {
	resp := &messages.ListUsersResponse{}
	if b.meta.Security != nil {
		for _, u := range b.meta.Security.Users {
			info := &messages.UserRecord{Name: u.Name, CreatedUnixMs: u.CreatedUnixMs, HasToken: u.TokenSha256 != ""}
			for _, c := range u.Scram {
				// Only which passwords exist: no salt, no keys.
				info.Scram = append(info.Scram, &messages.ScramCredential{Mechanism: c.Mechanism, Iterations: c.Iterations})
			}
			resp.Users = append(resp.Users, info)
		}
	}
	actors.Respond(ctx, resp)
}

// permitTopics checks op on every named topic (Create may also be granted
// on the cluster, as in Kafka). A request that names one refused topic is
// refused whole, each topic's result saying so.
func (b *brokerActor) permitTopics(ctx actor.Context, names []string, op messages.AclOperation, fail func(messages.ErrorCode, string) proto.Message) bool {
	if b.checked(ctx) == "" {
		return true
	}
	if op == opCreate && b.may(ctx, onCluster(opCreate)) == "" {
		return true
	}
	for _, name := range names {
		if why := b.may(ctx, onTopic(op, name)); why != "" {
			actors.Respond(ctx, fail(messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED, why))
			return false
		}
	}
	return true
}

// mayCreate reports whether the sender may create topic (auto-creation).
func (b *brokerActor) mayCreate(ctx actor.Context, topic string) bool {
	return b.may(ctx, onCluster(opCreate)) == "" || b.may(ctx, onTopic(opCreate, topic)) == ""
}

// logRefusal logs a refused request, at most one line a second, so a
// flood of them cannot flood the log.
func (b *brokerActor) logRefusal(msg string, args ...any) {
	if b.refusals.Allow() {
		b.cfg.Logger.Warn(msg, args...)
	}
}
