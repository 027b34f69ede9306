package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Group membership in Kafka's classic protocol, relayed by Sluice's group
// coordinator (see actors/groups, relay groups): the coordinator picks the
// protocol every member supports, gives the leader every member's
// metadata, and hands each member the assignment the leader sent.
//
//   JoinGroup (key 11), v0–7: from v4 a first join gets MEMBER_ID_REQUIRED
//     with an id to rejoin with; the answer comes when the rebalance
//     completes, up to the member's rebalance timeout.
//   SyncGroup (key 14), v0–5: the leader's carries the assignments; the
//     others wait for it.
//   Heartbeat (key 12), v0–4, LeaveGroup (key 13), v0–4 (v3+: several
//     members).
//
// Static membership (group.instance.id, JoinGroup v5+ and the requests
// that follow a join from v3): a member that restarts rejoins under its
// instance id and takes over its assignment without a rebalance; the
// member id it replaced is fenced (FENCED_INSTANCE_ID). See
// actors/groups/static.go.

// syncWait bounds how long a SyncGroup waits for the group's leader.
const syncWait = 5 * time.Minute

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

func handleSyncGroup(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.SyncGroupRequest)
	sreq := &messages.SyncGroupRequest{Group: req.Group, MemberId: req.MemberID, Generation: req.Generation, InstanceId: deref(req.InstanceID)}
	for _, a := range req.GroupAssignment {
		sreq.Assignments = append(sreq.Assignments, &messages.MemberBytes{MemberId: a.MemberID, Data: a.MemberAssignment})
	}
	answer := r.askFor(sreq, syncWait)
	return func() kmsg.Response {
		resp := kmsg.NewPtrSyncGroupResponse()
		sr, failed := answerAs[*messages.SyncGroupResponse](answer)
		if failed != 0 {
			resp.ErrorCode = failed
			return resp
		}
		resp.ErrorCode, resp.MemberAssignment = kafkaCode(sr.Error), sr.RelayAssignment
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(sr.ProtocolType), kmsg.StringPtr(sr.Protocol)
		return resp
	}
}

func handleHeartbeat(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.HeartbeatRequest)
	answer := r.ask(&messages.HeartbeatRequest{Group: req.Group, MemberId: req.MemberID, Generation: req.Generation, InstanceId: deref(req.InstanceID)})
	return func() kmsg.Response {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = errorOf(answer, func(m *messages.HeartbeatResponse) messages.ErrorCode { return m.Error })
		return resp
	}
}

func handleLeaveGroup(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.LeaveGroupRequest)
	leaves := []*messages.LeaveGroupRequest{{Group: req.Group, MemberId: req.MemberID}}
	if h.version >= 3 {
		leaves = nil
		for _, m := range req.Members {
			leaves = append(leaves, &messages.LeaveGroupRequest{Group: req.Group, MemberId: m.MemberID, InstanceId: deref(m.InstanceID)})
		}
	}
	answers := make([]Answer, len(leaves))
	for i, l := range leaves {
		answers[i] = r.ask(l)
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrLeaveGroupResponse()
		for i, l := range leaves {
			code := errorOf(answers[i], func(m *messages.LeaveGroupResponse) messages.ErrorCode { return m.Error })
			if h.version >= 3 {
				m := kmsg.NewLeaveGroupResponseMember()
				m.MemberID, m.ErrorCode = l.MemberId, code
				if req.Members[i].InstanceID != nil {
					m.InstanceID = req.Members[i].InstanceID
				}
				resp.Members = append(resp.Members, m)
			} else {
				resp.ErrorCode = code
			}
		}
		return resp
	}
}
