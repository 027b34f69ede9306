package kafka

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// ListGroups (key 16), v0–5: the groups this broker coordinates, with
// their state (v4+, filtered by StatesFilter) and type (v5+: "classic" or
// "consumer" for Kafka's consumer protocol, filtered by TypesFilter).

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
			state, kind := g.State, g.GroupType
			if kind == "" {
				kind = "classic"
			}
			if kind == "consumer" {
				state = kafkaGroupState(state)
			}
			if len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, state) ||
				len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, kind) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Group, consumerProtocol, state, kind
			resp.Groups = append(resp.Groups, lg)
		}
		return resp
	}
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}
