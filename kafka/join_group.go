package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Group membership in Kafka's classic protocol, relayed by Sluice's group
// coordinator (see actors/groups, relay groups): the coordinator picks the
// protocol every member supports, gives the leader every member's
// metadata, and hands each member the assignment the leader sent
// (sync_group.go; heartbeat.go and leave_group.go keep and end a
// membership).
//
// JoinGroup (key 11), v0–7: from v4 a first join gets MEMBER_ID_REQUIRED
// with an id to rejoin with; the answer comes when the rebalance
// completes, up to the member's rebalance timeout.
//
// Static membership (group.instance.id, JoinGroup v5+ and the requests
// that follow a join from v3): a member that restarts rejoins under its
// instance id and takes over its assignment without a rebalance; the
// member id it replaced is fenced (FENCED_INSTANCE_ID). See
// actors/groups/static.go.

func handleJoinGroup(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation, resp.MemberID = -1, req.MemberID
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		resp.ErrorCode = int16(messages.ErrorCode_INCONSISTENT_GROUP_PROTOCOL)
		return func() kmsg.Response { return resp }
	}
	rebalance := req.RebalanceTimeoutMillis
	if h.version < 1 {
		rebalance = req.SessionTimeoutMillis
	}
	jreq := &messages.JoinGroupRequest{Group: req.Group, MemberId: req.MemberID, SessionTimeoutMs: req.SessionTimeoutMillis,
		RebalanceTimeoutMs: rebalance, ProtocolType: req.ProtocolType, RequireMemberId: h.version >= 4, InstanceId: deref(req.InstanceID)}
	if h.clientID != nil {
		jreq.ClientId = *h.clientID
	}
	for _, p := range req.Protocols {
		jreq.Protocols = append(jreq.Protocols, &messages.GroupProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	answer := r.askFor(jreq, time.Duration(rebalance)*time.Millisecond+10*time.Second)
	return func() kmsg.Response {
		jr, failed := answerAs[*messages.JoinGroupResponse](answer)
		if failed != 0 {
			resp.ErrorCode = failed
			return resp
		}
		resp.ErrorCode, resp.MemberID = kafkaCode(jr.Error), jr.MemberId
		if jr.Error != messages.ErrorCode_NONE {
			return resp
		}
		resp.Generation, resp.LeaderID = jr.Generation, jr.LeaderId
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(jr.ProtocolType), kmsg.StringPtr(jr.Assignor)
		for _, m := range jr.MemberMetadata {
			resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{MemberID: m.MemberId, ProtocolMetadata: m.Data})
		}
		return resp
	}
}
