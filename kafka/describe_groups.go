package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeGroups (key 15), v0–5: state, assignor and members, with each
// member's subscription and assignment in Kafka's consumer encoding. A
// group of the consumer protocol (KIP-848) is Dead here, as in Kafka.

func handleDescribeGroups(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	answers := make([]Answer, len(req.Groups))
	for i, g := range req.Groups {
		answers[i] = r.ask(&messages.DescribeGroupRequest{Group: g})
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeGroupsResponse()
		for i, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group = g
			dr, failed := answerAs[*messages.DescribeGroupResponse](answers[i])
			switch {
			case failed != 0:
				rg.ErrorCode = failed
			case dr.Error == messages.ErrorCode_GROUP_ID_NOT_FOUND:
				rg.State = "Dead" // as Kafka describes a group it does not know
			case dr.Error != messages.ErrorCode_NONE:
				rg.ErrorCode, rg.ErrorMessage = kafkaCode(dr.Error), kmsg.StringPtr(dr.ErrorMessage)
			case dr.GroupType == "consumer":
				// Not a classic group: Kafka describes it as one it does not
				// know; ConsumerGroupDescribe shows it.
				rg.State = "Dead"
			default:
				rg.State, rg.ProtocolType, rg.Protocol = dr.State, consumerProtocol, dr.Assignor
				if dr.State == "Dead" {
					rg.ProtocolType = ""
				}
				if dr.ProtocolType != "" {
					rg.ProtocolType = dr.ProtocolType // a Kafka clients' group: their own bytes
				}
				for _, m := range dr.Members {
					if dr.ProtocolType != "" {
						rm := kmsg.DescribeGroupsResponseGroupMember{MemberID: m.MemberId, ClientID: m.ClientId,
							ClientHost: "-", ProtocolMetadata: m.ProtocolMetadata, MemberAssignment: m.RelayAssignment}
						if m.InstanceId != "" {
							rm.InstanceID = kmsg.StringPtr(m.InstanceId)
						}
						rg.Members = append(rg.Members, rm)
						continue
					}
					rg.Members = append(rg.Members, describeMember(m))
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// describeMember is a member in Kafka's terms: its subscription and
// assignment encoded as Kafka's consumer protocol encodes them, so Kafka
// tools decode them.
func describeMember(m *messages.MemberDescription) kmsg.DescribeGroupsResponseGroupMember {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = m.Topics
	assignment := kmsg.NewConsumerMemberAssignment()
	for _, tps := range m.Assignment {
		assignment.Topics = append(assignment.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tps.Topic, Partitions: tps.Partitions})
	}
	clientHost := m.PushAddress
	if clientHost == "" {
		clientHost = "-"
	}
	return kmsg.DescribeGroupsResponseGroupMember{MemberID: m.MemberId, ClientID: m.ClientId, ClientHost: clientHost,
		ProtocolMetadata: meta.AppendTo(nil), MemberAssignment: assignment.AppendTo(nil)}
}
