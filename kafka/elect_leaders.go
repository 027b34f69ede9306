package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// ElectLeaders (key 43), v0–2: preferred leader election, answered by the
// controller (every partition when the request names no topics). An
// unclean election (type 1) is refused: Sluice elects unclean leaders only
// through the topic's unclean.leader.election.enable.

func handleElectLeaders(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := kmsg.NewPtrElectLeadersResponse()
	if req.ElectionType != 0 {
		return func() kmsg.Response {
			resp.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
			resp.Topics = electionErrors(req, int16(messages.ErrorCode_INVALID_REQUEST), "only preferred leader elections (type 0) are served")
			return resp
		}
	}
	ereq := &messages.ElectLeadersRequest{}
	for _, t := range req.Topics {
		ereq.Partitions = append(ereq.Partitions, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
	}
	answer := r.ask(ereq)
	return func() kmsg.Response {
		m, code := answerAs[*messages.ElectLeadersResponse](answer)
		if code == 0 {
			code = kafkaCode(m.Error)
		}
		if code != 0 {
			resp.ErrorCode = code
			resp.Topics = electionErrors(req, code, m.GetErrorMessage())
			return resp
		}
		byTopic := map[string]int{}
		for _, p := range m.Results {
			i, ok := byTopic[p.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[p.Topic] = i
				t := kmsg.NewElectLeadersResponseTopic()
				t.Topic = p.Topic
				resp.Topics = append(resp.Topics, t)
			}
			if p.Partition < 0 {
				continue // a topic that does not exist: no partitions to list
			}
			pr := kmsg.NewElectLeadersResponseTopicPartition()
			pr.Partition, pr.ErrorCode = p.Partition, kafkaCode(p.Error)
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, pr)
		}
		return resp
	}
}

// electionErrors answers every partition the request names with code.
func electionErrors(req *kmsg.ElectLeadersRequest, code int16, text string) []kmsg.ElectLeadersResponseTopic {
	var out []kmsg.ElectLeadersResponseTopic
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			pr := kmsg.NewElectLeadersResponseTopicPartition()
			pr.Partition, pr.ErrorCode = p, code
			if text != "" {
				pr.ErrorMessage = kmsg.StringPtr(text)
			}
			rt.Partitions = append(rt.Partitions, pr)
		}
		out = append(out, rt)
	}
	return out
}
