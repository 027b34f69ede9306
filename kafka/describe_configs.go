package kafka

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/topicconfig"
)

// DescribeConfigs (key 32), v0–4: a topic's configuration (topicConfigs),
// each value with where it comes from.

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
	cfg := &r.conn.srv.cfg
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
				rr.Configs = topicConfigs(cfg, t.Configs, res.ConfigNames, h.version, req.IncludeSynonyms, req.IncludeDocumentation)
			case kmsg.ConfigResourceTypeBroker:
				if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(cfg.BrokerID)) {
					rr.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
					rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("this is broker %d: ask broker %s about its settings", cfg.BrokerID, res.ResourceName))
					break
				}
				rr.Configs = brokerConfigs(cfg.BrokerSettings, res.ConfigNames, h.version, req.IncludeSynonyms)
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

// topicConfigs lists a topic's configuration, every name Kafka defines
// (those asked for when some are), sorted by name: its own value (a
// dynamic topic config), else the broker's setting (a static broker
// config, for the ones Sluice applies, when it differs from the built-in
// default), else the default. v1+ with synonyms lists each level that has
// a value, the one in force first; v3+ adds the type and, when asked, the
// documentation.
func topicConfigs(cfg *Config, own map[string]string, names []string, version int16, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range topicconfig.All() {
		if len(names) > 0 && !slices.Contains(names, d.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = d.Name
		type level struct {
			name, value string
			source      kmsg.ConfigSource
		}
		var levels []level
		if v, set := own[d.Name]; set {
			levels = append(levels, level{d.Name, v, kmsg.ConfigSourceDynamicTopicConfig})
		}
		def := d.Default
		if d.Applied {
			if b, ok := cfg.TopicBuiltins[d.Name]; ok {
				def = b
			}
			if v, ok := cfg.TopicDefaults[d.Name]; ok && v != def {
				levels = append(levels, level{cmp.Or(d.Broker, d.Name), v, kmsg.ConfigSourceStaticBrokerConfig})
			}
		}
		levels = append(levels, level{cmp.Or(d.Broker, d.Name), def, kmsg.ConfigSourceDefaultConfig})
		c.Value = kmsg.StringPtr(levels[0].value)
		c.Source = levels[0].source
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		if version >= 1 && synonyms {
			for _, l := range levels {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = l.name, kmsg.StringPtr(l.value), l.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
		}
		c.ConfigType = kmsg.ConfigType(d.Type)
		if docs {
			c.Documentation = kmsg.StringPtr(d.Doc)
		}
		out = append(out, c)
	}
	return out
}

// brokerConfigs lists the broker's settings (those asked for when some
// are), all read-only: they are read at start.
func brokerConfigs(settings []BrokerSetting, names []string, version int16, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, st := range settings {
		if len(names) > 0 && !slices.Contains(names, st.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.IsDefault = st.Name, kmsg.StringPtr(st.Value), true, !st.Set
		c.Source = kmsg.ConfigSourceDefaultConfig
		if st.Set {
			c.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		if version >= 1 && synonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = st.Name, c.Value, c.Source
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		c.ConfigType = kmsg.ConfigTypeString
		if _, err := strconv.ParseBool(st.Value); err == nil {
			c.ConfigType = kmsg.ConfigTypeBoolean
		} else if _, err := strconv.ParseInt(st.Value, 10, 64); err == nil {
			c.ConfigType = kmsg.ConfigTypeLong
		}
		out = append(out, c)
	}
	return out
}
