package kafka

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
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
	var answer, brokers Answer
	if len(topics) > 0 {
		// The broker checks DescribeConfigs on each topic, as Kafka.
		answer = r.ask(&messages.DescribeTopicConfigsRequest{Topics: topics})
	}
	if slices.ContainsFunc(req.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
		return res.ResourceType == kmsg.ConfigResourceTypeBroker
	}) {
		// The broker checks that the principal may describe the cluster's
		// configs (as Kafka); the settings themselves are this broker's.
		brokers = r.ask(&messages.DescribeBrokerConfigsRequest{})
	}
	cfg := &r.conn.srv.cfg
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeConfigsResponse()
		described := map[string]*messages.TopicConfigs{}
		failed := int16(0)
		if answer != nil {
			var tcs *messages.DescribeTopicConfigsResponse
			if tcs, failed = answerAs[*messages.DescribeTopicConfigsResponse](answer); failed == 0 {
				for _, tc := range tcs.Topics {
					described[tc.Name] = tc
				}
			}
		}
		dynamic := r.conn.srv.dynamicConfigs()
		if dynamic == nil {
			dynamic = &brokerconfig.Values{}
		}
		for _, res := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			switch res.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				t := described[res.ResourceName]
				switch {
				case failed != 0:
					rr.ErrorCode = failed
				case t == nil:
					rr.ErrorCode, rr.ErrorMessage = int16(messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION), kmsg.StringPtr("no answer about this topic")
				case t.Error != messages.ErrorCode_NONE:
					rr.ErrorCode = kafkaCode(t.Error)
					if t.ErrorMessage != "" {
						rr.ErrorMessage = kmsg.StringPtr(t.ErrorMessage)
					}
				default:
					rr.Configs = topicConfigs(cfg, t.Configs, dynamic, res.ConfigNames, h.version, req.IncludeSynonyms, req.IncludeDocumentation)
				}
			case kmsg.ConfigResourceTypeBroker:
				if _, code, text := answerWithError[*messages.DescribeBrokerConfigsResponse](brokers); code != 0 {
					rr.ErrorCode, rr.ErrorMessage = code, text
					break
				}
				switch res.ResourceName {
				case "":
					rr.Configs = clusterDefaultConfigs(dynamic.Cluster, res.ConfigNames, h.version, req.IncludeSynonyms)
				case strconv.Itoa(int(cfg.BrokerID)):
					rr.Configs = brokerConfigs(cfg.BrokerSettings, *dynamic, res.ConfigNames, h.version, req.IncludeSynonyms)
				default:
					rr.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
					rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("this is broker %d: ask broker %s about its settings", cfg.BrokerID, res.ResourceName))
				}
			default:
				rr.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
				rr.ErrorMessage = kmsg.StringPtr("only topic and broker resources are described")
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

// topicConfigs lists a topic's configuration, every name Kafka defines
// (those asked for when some are), sorted by name: its own value (a
// dynamic topic config), else the dynamic broker setting that is its
// default (this broker's, then the cluster's), else the broker's flag (a
// static broker config, for the ones Sluice applies, when it differs from
// the built-in default), else the default. v1+ with synonyms lists each
// level that has a value, the one in force first; v3+ adds the type and,
// when asked, the documentation.
func topicConfigs(cfg *Config, own map[string]string, dynamic *brokerconfig.Values, names []string, version int16, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	dynamicName := map[string]string{} // topic config -> its dynamic broker default
	for name, key := range brokerconfig.TopicSynonyms {
		dynamicName[key] = name
	}
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
		if name, ok := dynamicName[d.Name]; ok {
			if v, set := dynamic.Broker[name]; set {
				levels = append(levels, level{name, v, kmsg.ConfigSourceDynamicBrokerConfig})
			}
			if v, set := dynamic.Cluster[name]; set {
				levels = append(levels, level{name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig})
			}
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
// are): a dynamic value in force (the broker's own, else the cluster
// default) over the one read at start. Only the dynamic ones
// (messages/brokerconfig) are not read-only.
func brokerConfigs(settings []BrokerSetting, dynamic brokerconfig.Values, names []string, version int16, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, st := range settings {
		if len(names) > 0 && !slices.Contains(names, st.Name) {
			continue
		}
		type level struct {
			value  string
			source kmsg.ConfigSource
		}
		var levels []level
		if v, ok := dynamic.Broker[st.Name]; ok {
			levels = append(levels, level{v, kmsg.ConfigSourceDynamicBrokerConfig})
		}
		if v, ok := dynamic.Cluster[st.Name]; ok {
			levels = append(levels, level{v, kmsg.ConfigSourceDynamicDefaultBrokerConfig})
		}
		if st.Set {
			levels = append(levels, level{st.Value, kmsg.ConfigSourceStaticBrokerConfig})
		} else {
			levels = append(levels, level{st.Value, kmsg.ConfigSourceDefaultConfig})
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = st.Name, kmsg.StringPtr(levels[0].value), levels[0].source
		c.ReadOnly, c.IsDefault = !brokerconfig.IsDynamic(st.Name), c.Source == kmsg.ConfigSourceDefaultConfig
		if version >= 1 && synonyms {
			for _, l := range levels {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = st.Name, kmsg.StringPtr(l.value), l.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
		}
		c.ConfigType = settingType(st.Value)
		out = append(out, c)
	}
	return out
}

// clusterDefaultConfigs lists the cluster's default dynamic settings, as
// Kafka describes the broker resource "".
func clusterDefaultConfigs(values map[string]string, names []string, version int16, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = name, kmsg.StringPtr(values[name]), kmsg.ConfigSourceDynamicDefaultBrokerConfig
		if version >= 1 && synonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = name, c.Value, c.Source
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		c.ConfigType = settingType(values[name])
		out = append(out, c)
	}
	return out
}

// settingType guesses a broker setting's type from its value.
func settingType(value string) kmsg.ConfigType {
	if value == "true" || value == "false" {
		return kmsg.ConfigTypeBoolean
	}
	if _, err := strconv.ParseInt(value, 10, 64); err == nil {
		return kmsg.ConfigTypeLong
	}
	return kmsg.ConfigTypeString
}
