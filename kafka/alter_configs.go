package kafka

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
)

// AlterConfigs (key 33), v0–2, and IncrementalAlterConfigs (key 44),
// v0–1: topic configuration changes, checked and applied by the
// controller as the other door's (every topic config Kafka defines,
// messages/topicconfig), and changes of brokers' dynamic settings
// (messages/brokerconfig; resource name "" is the cluster default, else a
// broker id). AlterConfigs replaces a resource's whole configuration;
// IncrementalAlterConfigs sets, deletes, and appends to or subtracts from
// list configs.

// configChanges is what an alter request asks of each resource: the topic
// changes and the broker changes for the controller, and the resources
// refused here.
type configChanges struct {
	req     *messages.AlterTopicConfigsRequest
	brokers map[int]*messages.AlterBrokerConfigsRequest // by the resource's index
	refused map[int]refusal                             // by the resource's index
}

type refusal struct {
	code int16
	why  string
}

func (c *configChanges) refuseWith(i int, code messages.ErrorCode, why string) {
	if c.refused == nil {
		c.refused = map[int]refusal{}
	}
	c.refused[i] = refusal{int16(code), why}
}

// refuse answers resource i (neither a topic nor a broker) here.
func (c *configChanges) refuse(i int) {
	c.refuseWith(i, messages.ErrorCode_INVALID_REQUEST, "only topic and broker configurations can be changed")
}

// broker adds the change of broker resource i named name: a broker's id,
// or "" for the cluster default.
func (c *configChanges) broker(i int, name string, ch *messages.AlterBrokerConfigsRequest) {
	ch.BrokerId = brokerconfig.ClusterDefault
	if name != "" {
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 {
			c.refuseWith(i, messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("broker resource %q: want a broker id, or \"\" for the cluster default", name))
			return
		}
		ch.BrokerId = int32(id)
	}
	if c.brokers == nil {
		c.brokers = map[int]*messages.AlterBrokerConfigsRequest{}
	}
	c.brokers[i] = ch
}

// finish sends the changes (if any) and returns how to answer resource i
// named name.
func (c *configChanges) finish(r *request) func(i int, name string) (int16, *string) {
	var answer Answer
	if len(c.req.Topics) > 0 {
		answer = r.ask(c.req)
	}
	brokerAnswers := map[int]Answer{}
	for i, ch := range c.brokers {
		brokerAnswers[i] = r.ask(ch)
	}
	var results func(string) (int16, *string)
	return func(i int, name string) (int16, *string) {
		if ref, ok := c.refused[i]; ok {
			return ref.code, kmsg.StringPtr(ref.why)
		}
		if a, ok := brokerAnswers[i]; ok {
			_, code, text := answerWithError[*messages.AlterBrokerConfigsResponse](a)
			return code, text
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
		if res.ResourceType == kmsg.ConfigResourceTypeBroker {
			ch := &messages.AlterBrokerConfigsRequest{Replace: true, ValidateOnly: req.ValidateOnly}
			for _, cfg := range res.Configs {
				if cfg.Value != nil {
					ch.Set = append(ch.Set, &messages.ConfigValue{Name: cfg.Name, Value: *cfg.Value})
				}
			}
			c.broker(i, res.ResourceName, ch)
			continue
		}
		if res.ResourceType != kmsg.ConfigResourceTypeTopic {
			c.refuse(i)
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
		if res.ResourceType == kmsg.ConfigResourceTypeBroker {
			if ch, why := brokerChange(res.Configs, req.ValidateOnly); why != "" {
				bad[i] = why
			} else {
				c.broker(i, res.ResourceName, ch)
			}
			continue
		}
		if res.ResourceType != kmsg.ConfigResourceTypeTopic {
			c.refuse(i)
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

// brokerChange is an IncrementalAlterConfigs of a broker resource as a
// change of its dynamic settings; why says what is wrong with it.
func brokerChange(configs []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) (*messages.AlterBrokerConfigsRequest, string) {
	ch := &messages.AlterBrokerConfigsRequest{ValidateOnly: validateOnly}
	for _, cfg := range configs {
		switch {
		case cfg.Op == kmsg.IncrementalAlterConfigOpSet && cfg.Value != nil:
			ch.Set = append(ch.Set, &messages.ConfigValue{Name: cfg.Name, Value: *cfg.Value})
		case cfg.Op == kmsg.IncrementalAlterConfigOpSet:
			return nil, "SET of " + cfg.Name + " without a value"
		case cfg.Op == kmsg.IncrementalAlterConfigOpDelete:
			ch.Delete = append(ch.Delete, cfg.Name)
		default:
			return nil, "APPEND and SUBTRACT of " + cfg.Name + ": no dynamic broker setting is a list"
		}
	}
	return ch, ""
}
