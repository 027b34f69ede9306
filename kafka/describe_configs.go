package kafka

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeConfigs (key 32), v0–4: a topic's configuration, each value
// marked as the topic's own or the broker default.

func handleDescribeConfigs(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	var topics []string
	for _, res := range req.Resources {
		if res.ResourceType == kmsg.ConfigResourceTypeTopic {
			topics = append(topics, res.ResourceName)
		}
	}
	var answer Answer
	if len(topics) > 0 {
		answer = r.ask(&messages.MetadataRequest{Topics: topics})
	}
	defaults := r.conn.srv.cfg.TopicDefaults
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeConfigsResponse()
		md := &messages.MetadataResponse{}
		if answer != nil {
			if res, err := answer.Wait(); err == nil {
				if m, ok := res.(*messages.MetadataResponse); ok {
					md = m
				}
			}
		}
		for _, res := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			switch res.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				t := findTopic(md, res.ResourceName)
				if t == nil || (t.Error != messages.ErrorCode_NONE && len(t.Partitions) == 0) {
					rr.ErrorCode = int16(messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION)
					if t == nil {
						rr.ErrorMessage = kmsg.StringPtr("no answer about this topic")
					}
					break
				}
				rr.Configs = topicConfigs(defaults, t.Configs, res.ConfigNames, h.version)
			case kmsg.ConfigResourceTypeBroker:
				// Brokers' settings are not exposed through this door.
			default:
				rr.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
				rr.ErrorMessage = kmsg.StringPtr("only topic and broker resources are described")
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

func findTopic(md *messages.MetadataResponse, name string) *messages.TopicMetadata {
	for _, t := range md.Topics {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// topicConfigs lists a topic's effective configuration, sorted by name:
// its own values, else the broker defaults.
func topicConfigs(defaults, own map[string]string, names []string, version int16) []kmsg.DescribeConfigsResponseResourceConfig {
	all := make([]string, 0, len(defaults))
	for name := range defaults {
		if len(names) == 0 || slices.Contains(names, name) {
			all = append(all, name)
		}
	}
	slices.Sort(all)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range all {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = name
		value, set := own[name]
		if !set {
			value = defaults[name]
		}
		c.Value = kmsg.StringPtr(value)
		c.IsDefault = !set
		c.Source = kmsg.ConfigSourceDefaultConfig
		if set {
			c.Source = kmsg.ConfigSourceDynamicTopicConfig
		}
		c.ConfigType = kmsg.ConfigTypeLong
		if _, err := strconv.ParseBool(value); err == nil {
			c.ConfigType = kmsg.ConfigTypeBoolean
		}
		out = append(out, c)
	}
	return out
}
