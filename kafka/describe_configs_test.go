package kafka

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// DescribeConfigs gives a topic's own values as dynamic topic configs and
// the rest as broker defaults, only the names asked for when some are;
// an unknown topic, a topic the broker refuses to describe and a resource
// type it does not describe get their error codes, a broker none.
func TestDescribeConfigsSourcesAndErrors(t *testing.T) {
	described := &messages.DescribeTopicConfigsResponse{Topics: []*messages.TopicConfigs{
		{Name: "orders", Configs: map[string]string{"retention.ms": "1000"}},
		{Name: "gone", Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION},
		{Name: "secret", Error: messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED, ErrorMessage: "no ACL allows DESCRIBE_CONFIGS"},
	}}
	_, addr := startServer(t, answerBy(func(m proto.Message) (proto.Message, error) {
		if _, ok := m.(*messages.DescribeBrokerConfigsRequest); ok {
			return &messages.DescribeBrokerConfigsResponse{}, nil
		}
		return described, nil
	}), Config{
		TopicDefaults:  map[string]string{"retention.ms": "604800000", "max.message.bytes": "1048588", "retention.bytes": "100"},
		TopicBuiltins:  map[string]string{"retention.ms": "604800000", "max.message.bytes": "1048588", "retention.bytes": "-1"},
		BrokerID:       1,
		BrokerSettings: []BrokerSetting{{Name: "log.dirs", Value: "/data", Set: true}, {Name: "num.partitions", Value: "1"}}})
	for _, v := range []int16{0, 4} {
		c := dial(t, addr)
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(v)
		add := func(typ kmsg.ConfigResourceType, name string, names ...string) {
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
			req.Resources = append(req.Resources, r)
		}
		add(kmsg.ConfigResourceTypeTopic, "orders")
		add(kmsg.ConfigResourceTypeTopic, "orders", "max.message.bytes")
		add(kmsg.ConfigResourceTypeTopic, "gone")
		add(kmsg.ConfigResourceTypeBroker, "1")
		add(kmsg.ConfigResourceType(99), "x")
		add(kmsg.ConfigResourceTypeBroker, "2")
		add(kmsg.ConfigResourceTypeTopic, "secret")
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(resp.Resources) != 7 {
			t.Fatalf("v%d: %d resources", v, len(resp.Resources))
		}
		all, some, gone, broker, bad := resp.Resources[0], resp.Resources[1], resp.Resources[2], resp.Resources[3], resp.Resources[4]
		got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, cfg := range all.Configs {
			got[cfg.Name] = cfg
		}
		// v0 says IsDefault; v1+ says the source instead.
		if r := got["retention.ms"]; deref(r.Value) != "1000" || (v == 0 && r.IsDefault) {
			t.Errorf("v%d retention.ms: %q default %v, want the topic's own 1000", v, deref(r.Value), r.IsDefault)
		}
		if m := got["max.message.bytes"]; deref(m.Value) != "1048588" || (v == 0 && !m.IsDefault) {
			t.Errorf("v%d max.message.bytes: %q default %v, want the broker default", v, deref(m.Value), m.IsDefault)
		}
		if v >= 1 && (got["retention.ms"].Source != kmsg.ConfigSourceDynamicTopicConfig || got["max.message.bytes"].Source != kmsg.ConfigSourceDefaultConfig) {
			t.Errorf("v%d sources: %v %v", v, got["retention.ms"].Source, got["max.message.bytes"].Source)
		}
		// Set on the broker: a static broker config under its broker name.
		if r := got["retention.bytes"]; deref(r.Value) != "100" || (v >= 1 && r.Source != kmsg.ConfigSourceStaticBrokerConfig) {
			t.Errorf("v%d retention.bytes: %q from %v, want the broker's 100", v, deref(r.Value), r.Source)
		}
		// Every name Kafka defines, those Sluice does not act on too.
		if r, ok := got["cleanup.policy"]; !ok || deref(r.Value) != "delete" || len(all.Configs) < 30 {
			t.Errorf("v%d: %d configs, cleanup.policy %q", v, len(all.Configs), deref(r.Value))
		}
		// The broker's settings, read-only, set or default; another
		// broker's are its own to tell.
		if len(broker.Configs) != 2 || broker.Configs[0].Name != "log.dirs" || deref(broker.Configs[0].Value) != "/data" ||
			!broker.Configs[0].ReadOnly || (v >= 1 && (broker.Configs[0].Source != kmsg.ConfigSourceStaticBrokerConfig ||
			broker.Configs[1].Source != kmsg.ConfigSourceDefaultConfig)) {
			t.Errorf("v%d broker configs %+v", v, broker.Configs)
		}
		if other := resp.Resources[5]; other.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
			t.Errorf("v%d another broker: code %d", v, other.ErrorCode)
		}
		if len(some.Configs) != 1 || some.Configs[0].Name != "max.message.bytes" {
			t.Errorf("v%d: asked for one name, got %v", v, some.Configs)
		}
		if gone.ErrorCode != int16(messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION) || broker.ErrorCode != 0 ||
			bad.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
			t.Errorf("v%d codes: unknown topic %d, broker %d, bad type %d", v, gone.ErrorCode, broker.ErrorCode, bad.ErrorCode)
		}
		// A topic the principal may not DescribeConfigs: the broker's refusal.
		if secret := resp.Resources[6]; secret.ErrorCode != int16(messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED) || len(secret.Configs) != 0 {
			t.Errorf("v%d a topic refused: code %d, %d configs", v, secret.ErrorCode, len(secret.Configs))
		}
	}
}

// With synonyms and documentation (v3+), each config lists its levels,
// the one in force first, its type and a line of documentation.
func TestDescribeConfigsSynonymsAndDocumentation(t *testing.T) {
	described := &messages.DescribeTopicConfigsResponse{Topics: []*messages.TopicConfigs{
		{Name: "orders", Configs: map[string]string{"retention.ms": "1000"}},
	}}
	_, addr := startServer(t, oneAnswer(described), Config{
		TopicDefaults: map[string]string{"retention.ms": "86400000"},
		TopicBuiltins: map[string]string{"retention.ms": "604800000"}})
	c := dial(t, addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, "orders", []string{"retention.ms", "cleanup.policy"}
	req.Resources = append(req.Resources, r)
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(4)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	cfgs := resp.Resources[0].Configs
	if len(cfgs) != 2 || cfgs[0].Name != "cleanup.policy" || cfgs[1].Name != "retention.ms" {
		t.Fatalf("configs %+v", cfgs)
	}
	ret := cfgs[1]
	var levels []string
	for _, s := range ret.ConfigSynonyms {
		levels = append(levels, fmt.Sprintf("%s=%s/%v", s.Name, deref(s.Value), s.Source))
	}
	want := "retention.ms=1000/DYNAMIC_TOPIC_CONFIG log.retention.ms=86400000/STATIC_BROKER_CONFIG log.retention.ms=604800000/DEFAULT_CONFIG"
	if strings.Join(levels, " ") != want || ret.ConfigType != kmsg.ConfigTypeLong || deref(ret.Documentation) == "" {
		t.Errorf("retention.ms: synonyms %v type %v doc %q; want %s", levels, ret.ConfigType, deref(ret.Documentation), want)
	}
	if cp := cfgs[0]; cp.ConfigType != kmsg.ConfigTypeList || cp.Source != kmsg.ConfigSourceDefaultConfig || len(cp.ConfigSynonyms) != 1 {
		t.Errorf("cleanup.policy: %+v", cp)
	}
}

// A broker's settings are described only to principals the broker lets
// describe the cluster's configs (Kafka's DescribeConfigs on the cluster):
// the broker's refusal comes back as the resource's error, with its text.
func TestDescribeBrokerConfigsNeedsTheCluster(t *testing.T) {
	_, addr := startServer(t, answerBy(func(m proto.Message) (proto.Message, error) {
		if _, ok := m.(*messages.DescribeBrokerConfigsRequest); ok {
			return &messages.DescribeBrokerConfigsResponse{Error: messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED,
				ErrorMessage: "no ACL allows DESCRIBE_CONFIGS on the cluster"}, nil
		}
		return &messages.MetadataResponse{}, nil
	}), Config{BrokerID: 1, BrokerSettings: []BrokerSetting{{Name: "log.dirs", Value: "/data", Set: true}}})
	c := dial(t, addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, r)
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(4)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	if got := resp.Resources[0]; got.ErrorCode != 31 || len(got.Configs) != 0 || got.ErrorMessage == nil {
		t.Errorf("broker 1 described to a principal refused: code %d, %d configs", got.ErrorCode, len(got.Configs))
	}
}
