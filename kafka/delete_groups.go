package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DeleteGroups (key 42), v0–2: deletes groups without members, with their
// committed offsets.

func handleDeleteGroups(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	answers := make([]Answer, len(req.Groups))
	for i, g := range req.Groups {
		answers[i] = r.ask(&messages.DeleteGroupRequest{Group: g})
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrDeleteGroupsResponse()
		for i, g := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = g
			rg.ErrorCode = errorOf(answers[i], func(m *messages.DeleteGroupResponse) messages.ErrorCode { return m.Error })
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}
