package kafka

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
)

// recordAlters answers every AlterTopicConfigsRequest with a result per
// topic (INVALID_CONFIG for topic "bad") and keeps the requests.
func recordAlters(t *testing.T) (string, func() []*messages.AlterTopicConfigsRequest) {
	var mu sync.Mutex
	var got []*messages.AlterTopicConfigsRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		if br, ok := req.(*messages.AlterBrokerConfigsRequest); ok {
			// As the controller answers: only dynamic settings change.
			if _, err := brokerconfig.Apply(nil, actors.BrokerConfigChange(br)); err != nil {
				return &messages.AlterBrokerConfigsResponse{Error: messages.ErrorCode_INVALID_CONFIG, ErrorMessage: err.Error()}, nil
			}
			return &messages.AlterBrokerConfigsResponse{}, nil
		}
		ar := req.(*messages.AlterTopicConfigsRequest)
		mu.Lock()
		got = append(got, ar)
		mu.Unlock()
		resp := &messages.AlterTopicConfigsResponse{}
		for _, ch := range ar.Topics {
			r := &messages.TopicResult{Name: ch.Name}
			if ch.Name == "bad" {
				r.Error, r.ErrorMessage = messages.ErrorCode_INVALID_CONFIG, "no"
			}
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}), Config{})
	return addr, func() []*messages.AlterTopicConfigsRequest {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// AlterConfigs replaces a topic's whole configuration; a broker resource
// is refused with the reason, other types are INVALID_REQUEST.
func TestAlterConfigs(t *testing.T) {
	addr, asked := recordAlters(t)
	for _, v := range []int16{0, 2} {
		c := dial(t, addr)
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(v)
		req.ValidateOnly = true
		for _, res := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "orders"}, {kmsg.ConfigResourceTypeTopic, "bad"}, {kmsg.ConfigResourceTypeBroker, "1"}, {9, "x"}, {0, "y"},
			{kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeBroker, "x"}} {
			r := kmsg.NewAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = res.typ, res.name
			cfg := kmsg.NewAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("1000")
			if res.typ == kmsg.ConfigResourceTypeBroker && res.name != "1" {
				cfg.Name, cfg.Value = "num.partitions", kmsg.StringPtr("3")
			}
			r.Configs = append(r.Configs, cfg)
			req.Resources = append(req.Resources, r)
		}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrAlterConfigsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatal(err)
		}
		codes := []int16{}
		for _, r := range resp.Resources {
			codes = append(codes, r.ErrorCode)
		}
		want := []int16{0, int16(messages.ErrorCode_INVALID_CONFIG), int16(messages.ErrorCode_INVALID_CONFIG),
			int16(messages.ErrorCode_INVALID_REQUEST), int16(messages.ErrorCode_INVALID_REQUEST), 0, int16(messages.ErrorCode_INVALID_REQUEST)}
		if !slices.Equal(codes, want) || !strings.Contains(deref(resp.Resources[2].ErrorMessage), "retention.ms cannot be changed while brokers run") {
			t.Errorf("v%d codes %v, want %v; broker: %q", v, codes, want, deref(resp.Resources[2].ErrorMessage))
		}
	}
	for _, ar := range asked() {
		if len(ar.Topics) == 0 {
			continue
		}
		ch := ar.Topics[0]
		if !ar.ValidateOnly || len(ar.Topics) != 2 || !ch.Replace || !maps.Equal(ch.Set, map[string]string{"retention.ms": "1000"}) {
			t.Errorf("asked %v", ar)
		}
	}
}

// IncrementalAlterConfigs maps SET, DELETE, APPEND and SUBTRACT onto the
// topic's change; an unknown operation refuses the resource.
func TestIncrementalAlterConfigs(t *testing.T) {
	addr, asked := recordAlters(t)
	c := dial(t, addr)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	add := func(name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeTopic, name, ops
		req.Resources = append(req.Resources, r)
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = name, o, value
		return cfg
	}
	add("orders", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1000")),
		op("segment.bytes", kmsg.IncrementalAlterConfigOpDelete, nil),
		op("leader.replication.throttled.replicas", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("0:1")),
		op("follower.replication.throttled.replicas", kmsg.IncrementalAlterConfigOpSubtract, kmsg.StringPtr("0:2")))
	add("odd", op("retention.ms", 7, kmsg.StringPtr("1")))
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(1)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	if resp.Resources[0].ErrorCode != 0 || resp.Resources[1].ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
		t.Fatalf("codes %d %d", resp.Resources[0].ErrorCode, resp.Resources[1].ErrorCode)
	}
	got := asked()
	if len(got) != 1 || len(got[0].Topics) != 1 {
		t.Fatalf("asked %v", got)
	}
	ch := got[0].Topics[0]
	if ch.Replace || ch.Set["retention.ms"] != "1000" || !slices.Equal(ch.Delete, []string{"segment.bytes"}) ||
		ch.Append["leader.replication.throttled.replicas"] != "0:1" || ch.Subtract["follower.replication.throttled.replicas"] != "0:2" {
		t.Errorf("change %v", ch)
	}
}
