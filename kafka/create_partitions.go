package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// CreatePartitions (key 37), v0–3: grows a topic, placed as at creation.

func handleCreatePartitions(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := kmsg.NewPtrCreatePartitionsResponse()
	creq := &messages.CreatePartitionsRequest{ValidateOnly: req.ValidateOnly}
	refused := map[string]bool{}
	for _, t := range req.Topics {
		if len(t.Assignment) > 0 {
			refused[t.Topic] = true
			continue
		}
		creq.Topics = append(creq.Topics, &messages.PartitionCount{Name: t.Topic, Count: t.Count})
	}
	var answer Answer
	if len(creq.Topics) > 0 {
		answer = r.ask(creq)
	}
	return func() kmsg.Response {
		results := topicResults(answer)
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			if refused[t.Topic] {
				rt.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
				rt.ErrorMessage = kmsg.StringPtr("manual replica assignment is not supported")
			} else {
				rt.ErrorCode, rt.ErrorMessage = results(t.Topic)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
