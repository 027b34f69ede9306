package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// LeaveGroup (key 13), v0–4 (v3+: several members).

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
