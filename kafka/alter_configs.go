package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// AlterConfigs (key 33), v0–2, and IncrementalAlterConfigs (key 44),
// v0–1: topic configuration changes, checked and applied by the
// controller as the other door's (every topic config Kafka defines,
// messages/topicconfig). AlterConfigs replaces a topic's whole
// configuration; IncrementalAlterConfigs sets, deletes, and appends to or
// subtracts from list configs. Broker settings are given at start (flags
// or --config) and cannot be changed at run time yet: a broker resource
// gets INVALID_CONFIG saying so.

const brokerConfigsStatic = "broker settings are read at start (flags or --config) and cannot be changed at run time yet"

// configChanges is what an alter request asks of each resource: the topic
// changes for the controller, and the resources refused here.
type configChanges struct {
	req     *messages.AlterTopicConfigsRequest
	refused map[int]refusal // by the resource's index
}

type refusal struct {
	code int16
	why  string
}

// refuse answers resource i (not a topic) here: a broker's settings are
// static, other types are not changed.
func (c *configChanges) refuse(i int, typ kmsg.ConfigResourceType) {
	if c.refused == nil {
		c.refused = map[int]refusal{}
	}
	r := refusal{int16(messages.ErrorCode_INVALID_REQUEST), "only topic configurations can be changed"}
	if typ == kmsg.ConfigResourceTypeBroker {
		r = refusal{int16(messages.ErrorCode_INVALID_CONFIG), brokerConfigsStatic}
	}
	c.refused[i] = r
}

// finish sends the topic changes (if any) and returns how to answer
// resource i named name.
func (c *configChanges) finish(r *request) func(i int, name string) (int16, *string) {
	var answer Answer
	if len(c.req.Topics) > 0 {
		answer = r.ask(c.req)
	}
	var results func(string) (int16, *string)
	return func(i int, name string) (int16, *string) {
		if ref, ok := c.refused[i]; ok {
			return ref.code, kmsg.StringPtr(ref.why)
		}
		if results == nil {
			results = topicResults(answer)
		}
		return results(name)
	}
}

func handleAlterConfigs(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterConfigsRequest)
	c := &configChanges{req: &messages.AlterTopicConfigsRequest{ValidateOnly: req.ValidateOnly}}
	for i, res := range req.Resources {
		if res.ResourceType != kmsg.ConfigResourceTypeTopic {
			c.refuse(i, res.ResourceType)
			continue
		}
		ch := &messages.TopicConfigChange{Name: res.ResourceName, Replace: true, Set: map[string]string{}}
		for _, cfg := range res.Configs {
			if cfg.Value != nil {
				ch.Set[cfg.Name] = *cfg.Value
			}
		}
		c.req.Topics = append(c.req.Topics, ch)
	}
	answerOf := c.finish(r)
	return func() kmsg.Response {
		resp := kmsg.NewPtrAlterConfigsResponse()
		for i, res := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			rr.ErrorCode, rr.ErrorMessage = answerOf(i, res.ResourceName)
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

func handleIncrementalAlterConfigs(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	c := &configChanges{req: &messages.AlterTopicConfigsRequest{ValidateOnly: req.ValidateOnly}}
	bad := map[int]string{} // refused for its ops: why
	for i, res := range req.Resources {
		if res.ResourceType != kmsg.ConfigResourceTypeTopic {
			c.refuse(i, res.ResourceType)
			continue
		}
		ch := &messages.TopicConfigChange{Name: res.ResourceName, Set: map[string]string{},
			Append: map[string]string{}, Subtract: map[string]string{}}
		for _, cfg := range res.Configs {
			value := ""
			if cfg.Value != nil {
				value = *cfg.Value
			}
			switch cfg.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if cfg.Value == nil {
					bad[i] = "SET of " + cfg.Name + " without a value"
				}
				ch.Set[cfg.Name] = value
			case kmsg.IncrementalAlterConfigOpDelete:
				ch.Delete = append(ch.Delete, cfg.Name)
			case kmsg.IncrementalAlterConfigOpAppend:
				ch.Append[cfg.Name] = value
			case kmsg.IncrementalAlterConfigOpSubtract:
				ch.Subtract[cfg.Name] = value
			default:
				bad[i] = "unknown operation on " + cfg.Name
			}
		}
		if bad[i] == "" {
			c.req.Topics = append(c.req.Topics, ch)
		}
	}
	answerOf := c.finish(r)
	return func() kmsg.Response {
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		for i, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			if why := bad[i]; why != "" {
				rr.ErrorCode, rr.ErrorMessage = int16(messages.ErrorCode_INVALID_REQUEST), kmsg.StringPtr(why)
			} else {
				rr.ErrorCode, rr.ErrorMessage = answerOf(i, res.ResourceName)
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}
