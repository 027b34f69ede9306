package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// CreateTopics (key 19), v0–7: -1 partitions or replicas is the broker
// default; manual replica assignment is refused. Any broker takes it and
// forwards it to the controller.

func handleCreateTopics(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := kmsg.NewPtrCreateTopicsResponse()
	creq := &messages.CreateTopicsRequest{ValidateOnly: req.ValidateOnly}
	refused := map[string]string{}
	for _, t := range req.Topics {
		if len(t.ReplicaAssignment) > 0 {
			refused[t.Topic] = "manual replica assignment is not supported; give a partition count and a replication factor"
			continue
		}
		spec := &messages.TopicSpec{Name: t.Topic, Partitions: max(t.NumPartitions, 0), ReplicationFactor: int32(max(t.ReplicationFactor, 0)),
			Configs: map[string]string{}}
		for _, c := range t.Configs {
			if c.Value != nil {
				spec.Configs[c.Name] = *c.Value
			}
		}
		creq.Topics = append(creq.Topics, spec)
	}
	var answer Answer
	if len(creq.Topics) > 0 {
		answer = r.ask(creq)
	}
	return func() kmsg.Response {
		results := topicResults(answer)
		created := createdCounts(answer)
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
			if why, ok := refused[t.Topic]; ok {
				rt.ErrorCode, rt.ErrorMessage = int16(messages.ErrorCode_INVALID_REQUEST), kmsg.StringPtr(why)
			} else {
				rt.ErrorCode, rt.ErrorMessage = results(t.Topic)
				if rt.ErrorCode == 0 && h.version >= 5 {
					rt.NumPartitions, rt.ReplicationFactor = t.NumPartitions, t.ReplicationFactor
					if c, ok := created[t.Topic]; ok {
						rt.NumPartitions, rt.ReplicationFactor = c.Partitions, int16(c.ReplicationFactor)
					}
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// createdCounts maps each topic the answer created to its result, which
// holds its partitions and replication factor.
func createdCounts(answer Answer) map[string]*messages.TopicResult {
	out := map[string]*messages.TopicResult{}
	if answer == nil {
		return out
	}
	if res, err := answer.Wait(); err == nil {
		if m, ok := res.(*messages.CreateTopicsResponse); ok {
			for _, r := range m.Results {
				if r.Partitions > 0 {
					out[r.Name] = r
				}
			}
		}
	}
	return out
}
