package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Heartbeat (key 12), v0–4.

func handleHeartbeat(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.HeartbeatRequest)
	answer := r.ask(&messages.HeartbeatRequest{Group: req.Group, MemberId: req.MemberID, Generation: req.Generation, InstanceId: deref(req.InstanceID)})
	return func() kmsg.Response {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = errorOf(answer, func(m *messages.HeartbeatResponse) messages.ErrorCode { return m.Error })
		return resp
	}
}
