package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeConfigs gives a topic's own values as dynamic topic configs and
// the rest as broker defaults, only the names asked for when some are;
// an unknown topic and a resource type it does not describe get their
// error codes, a broker none.
func TestDescribeConfigsSourcesAndErrors(t *testing.T) {
	md := &messages.MetadataResponse{Topics: []*messages.TopicMetadata{
		{Name: "orders", Configs: map[string]string{"retention.ms": "1000"}, Partitions: []*messages.PartitionMetadata{{Partition: 0}}},
		{Name: "gone", Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION},
	}}
	_, addr := startServer(t, oneAnswer(md), Config{TopicDefaults: map[string]string{"retention.ms": "604800000", "max.message.bytes": "1048588"}})
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
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(resp.Resources) != 5 {
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
		if len(some.Configs) != 1 || some.Configs[0].Name != "max.message.bytes" {
			t.Errorf("v%d: asked for one name, got %v", v, some.Configs)
		}
		if gone.ErrorCode != int16(messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION) || broker.ErrorCode != 0 ||
			bad.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
			t.Errorf("v%d codes: unknown topic %d, broker %d, bad type %d", v, gone.ErrorCode, broker.ErrorCode, bad.ErrorCode)
		}
	}
}
