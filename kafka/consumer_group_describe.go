package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// ConsumerGroupDescribe (key 69), v0–1: groups of Kafka's consumer
// protocol (KIP-848) with their epochs, assignor and members, each with
// its subscription, what it holds and its target. A classic group is
// GROUP_ID_NOT_FOUND ("not a consumer group"), as in Kafka.

func handleConsumerGroupDescribe(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	answers := make([]Answer, len(req.Groups))
	for i, g := range req.Groups {
		answers[i] = r.ask(&messages.DescribeGroupRequest{Group: g})
	}
	ids := r.ask(&messages.MetadataRequest{})
	return func() kmsg.Response {
		byName := map[string][16]byte{}
		if md, failed := answerAs[*messages.MetadataResponse](ids); failed == 0 {
			for _, t := range md.Topics {
				byName[t.Name] = topicID(t.TopicId)
			}
		}
		assignment := func(tps []*messages.TopicPartitions) kmsg.Assignment {
			a := kmsg.NewAssignment()
			for _, tp := range tps {
				a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: byName[tp.Topic], Topic: tp.Topic, Partitions: tp.Partitions})
			}
			return a
		}
		resp := kmsg.NewPtrConsumerGroupDescribeResponse()
		for i, g := range req.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group = g
			rg.AuthorizedOperations = -2147483648 // not asked for, or not computed
			dr, failed := answerAs[*messages.DescribeGroupResponse](answers[i])
			switch {
			case failed != 0:
				rg.ErrorCode = failed
			case dr.Error != messages.ErrorCode_NONE:
				rg.ErrorCode, rg.ErrorMessage = kafkaCode(dr.Error), kmsg.StringPtr(dr.ErrorMessage)
			case dr.State == "Dead":
				rg.ErrorCode = int16(messages.ErrorCode_GROUP_ID_NOT_FOUND)
				rg.ErrorMessage = kmsg.StringPtr("group " + g + " not found")
			case dr.GroupType != "consumer":
				rg.ErrorCode = int16(messages.ErrorCode_GROUP_ID_NOT_FOUND)
				rg.ErrorMessage = kmsg.StringPtr("group " + g + " is not a consumer group")
			default:
				rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = kafkaGroupState(dr.State), dr.Generation, dr.AssignmentEpoch, dr.Assignor
				for _, m := range dr.Members {
					rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
					rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberId, m.MemberEpoch, m.ClientId, m.ClientHost
					rm.SubscribedTopics = m.Topics
					if rm.SubscribedTopics == nil {
						rm.SubscribedTopics = []string{}
					}
					if m.InstanceId != "" {
						rm.InstanceID = kmsg.StringPtr(m.InstanceId)
					}
					if m.RackId != "" {
						rm.RackID = kmsg.StringPtr(m.RackId)
					}
					if m.Regex != "" {
						rm.SubscribedTopicRegex = kmsg.StringPtr(m.Regex)
					}
					rm.Assignment, rm.TargetAssignment = assignment(m.Assignment), assignment(m.Target)
					rm.MemberType = 1 // a consumer of the consumer protocol
					rg.Members = append(rg.Members, rm)
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// kafkaGroupState is a consumer group's state as Kafka names it
// (ConsumerGroupState: lower case).
func kafkaGroupState(s string) string {
	switch s {
	case "Empty":
		return "empty"
	case "Reconciling":
		return "reconciling"
	case "Stable":
		return "stable"
	}
	return "unknown"
}
