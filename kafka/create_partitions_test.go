package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// CreatePartitions asks the controller for the new counts of the topics
// without a manual assignment (refused for that topic alone); each topic
// gets its result; a broker that cannot be reached fails every topic.
func TestCreatePartitionsOutcomes(t *testing.T) {
	var asked *messages.CreatePartitionsRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		asked = req.(*messages.CreatePartitionsRequest)
		return &messages.CreatePartitionsResponse{Results: []*messages.TopicResult{
			{Name: "grow"}, {Name: "shrink", Error: messages.ErrorCode_INVALID_PARTITIONS, ErrorMessage: "3 partitions, cannot go to 2"},
		}}, nil
	}), Config{})
	topic := func(name string, count int32, manual bool) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		if manual {
			rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{0}}}
		}
		return rt
	}
	for _, v := range []int16{0, 3} {
		asked = nil
		c := dial(t, addr)
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(v)
		req.ValidateOnly = true
		req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("grow", 6, false), topic("shrink", 2, false), topic("manual", 4, true)}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrCreatePartitionsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if asked == nil || !asked.ValidateOnly || len(asked.Topics) != 2 || asked.Topics[0].Name != "grow" || asked.Topics[0].Count != 6 {
			t.Fatalf("v%d: the controller was asked %v", v, asked)
		}
		got := map[string]kmsg.CreatePartitionsResponseTopic{}
		for _, rt := range resp.Topics {
			got[rt.Topic] = rt
		}
		if g := got["grow"]; g.ErrorCode != 0 {
			t.Errorf("v%d grow: code %d", v, g.ErrorCode)
		}
		if s := got["shrink"]; s.ErrorCode != int16(messages.ErrorCode_INVALID_PARTITIONS) || deref(s.ErrorMessage) == "" {
			t.Errorf("v%d shrink: code %d, message %q", v, s.ErrorCode, deref(s.ErrorMessage))
		}
		if m := got["manual"]; m.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
			t.Errorf("v%d manual assignment: code %d", v, m.ErrorCode)
		}
	}

	_, down := startServer(t, failingBroker, Config{})
	c := dial(t, down)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = []kmsg.CreatePartitionsRequestTopic{topic("grow", 6, false)}
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrCreatePartitionsResponse()
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode == 0 {
		t.Fatalf("with no broker to ask: %+v", resp.Topics)
	}
}
