package kafka

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DeleteTopics (key 20), v0–6: by name (a topic id alone is refused).

func handleDeleteTopics(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := kmsg.NewPtrDeleteTopicsResponse()
	names := slices.Clone(req.TopicNames)
	byID := 0
	for _, t := range req.Topics {
		if t.Topic == nil {
			byID++
			continue
		}
		names = append(names, *t.Topic)
	}
	var answer Answer
	if len(names) > 0 {
		answer = r.ask(&messages.DeleteTopicsRequest{Names: names})
	}
	return func() kmsg.Response {
		results := topicResults(answer)
		for _, name := range names {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			rt.ErrorCode, rt.ErrorMessage = results(name)
			resp.Topics = append(resp.Topics, rt)
		}
		for ; byID > 0; byID-- {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.ErrorCode = errUnknownTopicID
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}
