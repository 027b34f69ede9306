package kafka

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// ListGroups (key 16), v0–4: the groups this broker coordinates.

func handleListGroups(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ListGroupsRequest)
	answer := r.ask(&messages.ListGroupsRequest{})
	return func() kmsg.Response {
		resp := kmsg.NewPtrListGroupsResponse()
		res, err := answer.Wait()
		lr, ok := res.(*messages.ListGroupsResponse)
		if err != nil || !ok {
			resp.ErrorCode = int16(messages.ErrorCode_COORDINATOR_NOT_AVAILABLE)
			return resp
		}
		for _, g := range lr.Groups {
			if len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, g.State) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState = g.Group, consumerProtocol, g.State
			resp.Groups = append(resp.Groups, lg)
		}
		return resp
	}
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}
