package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// SyncGroup (key 14), v0–5: the leader's carries the assignments; the
// others wait for it.

// syncWait bounds how long a SyncGroup waits for the group's leader.
const syncWait = 5 * time.Minute

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
