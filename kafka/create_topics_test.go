package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// CreateTopics asks the controller once for the topics it can ask for,
// with their counts (-1: the broker default) and configs; a manual replica
// assignment is refused for its topic alone; each topic gets the
// controller's result, and v5+ echoes the counts of a created topic.
func TestCreateTopicsPassesOnAndRefusesAssignments(t *testing.T) {
	var asked *messages.CreateTopicsRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		asked = req.(*messages.CreateTopicsRequest)
		return &messages.CreateTopicsResponse{Results: []*messages.TopicResult{
			{Name: "fresh"}, {Name: "taken", Error: messages.ErrorCode_TOPIC_ALREADY_EXISTS, ErrorMessage: "topic \"taken\" exists"},
		}}, nil
	}), Config{})
	for _, v := range []int16{0, 7} {
		asked = nil
		c := dial(t, addr)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		fresh := kmsg.NewCreateTopicsRequestTopic()
		fresh.Topic, fresh.NumPartitions, fresh.ReplicationFactor = "fresh", 3, -1
		value := "1000"
		fresh.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: &value}}
		taken := kmsg.NewCreateTopicsRequestTopic()
		taken.Topic, taken.NumPartitions, taken.ReplicationFactor = "taken", 1, 1
		manual := kmsg.NewCreateTopicsRequestTopic()
		manual.Topic, manual.NumPartitions, manual.ReplicationFactor = "manual", -1, -1
		manual.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
		req.Topics = []kmsg.CreateTopicsRequestTopic{fresh, taken, manual}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if asked == nil || len(asked.Topics) != 2 || asked.Topics[0].Partitions != 3 || asked.Topics[0].ReplicationFactor != 0 ||
			asked.Topics[0].Configs["retention.ms"] != "1000" {
			t.Fatalf("v%d: the controller was asked %v", v, asked)
		}
		got := map[string]kmsg.CreateTopicsResponseTopic{}
		for _, rt := range resp.Topics {
			got[rt.Topic] = rt
		}
		if f := got["fresh"]; f.ErrorCode != 0 || (v >= 5 && f.NumPartitions != 3) {
			t.Errorf("v%d fresh: code %d, %d partitions", v, f.ErrorCode, f.NumPartitions)
		}
		if tk := got["taken"]; tk.ErrorCode != int16(messages.ErrorCode_TOPIC_ALREADY_EXISTS) || (v >= 1 && deref(tk.ErrorMessage) == "") {
			t.Errorf("v%d taken: code %d, message %q", v, tk.ErrorCode, deref(tk.ErrorMessage))
		}
		if m := got["manual"]; m.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
			t.Errorf("v%d manual assignment: code %d", v, m.ErrorCode)
		}
	}
}
