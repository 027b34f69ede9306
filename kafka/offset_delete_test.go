package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// OffsetDelete asks the coordinator for the group's partitions and answers
// each partition's outcome, grouped by topic; a group-level refusal is the
// response's code, except a topic authorization failure, which Kafka
// reports per partition.
func TestOffsetDeleteOutcomes(t *testing.T) {
	answer := &messages.DeleteOffsetsResponse{}
	var asked *messages.DeleteOffsetsRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		asked = req.(*messages.DeleteOffsetsRequest)
		return answer, nil
	}), Config{})
	send := func() *kmsg.OffsetDeleteResponse {
		t.Helper()
		c := dial(t, addr)
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = "g"
		req.Topics = []kmsg.OffsetDeleteRequestTopic{
			{Topic: "a", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}},
			{Topic: "b", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrOffsetDeleteResponse()
		if _, err := c.read(resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}

	answer.Partitions = []*messages.PartitionError{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1, Error: messages.ErrorCode_GROUP_SUBSCRIBED_TO_TOPIC},
		{Topic: "b", Partition: 0}}
	resp := send()
	if asked.Group != "g" || len(asked.Partitions) != 2 || len(asked.Partitions[0].Partitions) != 2 {
		t.Fatalf("the coordinator was asked %v", asked)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 ||
		resp.Topics[0].Partitions[1].ErrorCode != int16(messages.ErrorCode_GROUP_SUBSCRIBED_TO_TOPIC) || resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Errorf("per partition: %+v", resp)
	}

	*answer = messages.DeleteOffsetsResponse{Error: messages.ErrorCode_GROUP_ID_NOT_FOUND}
	if resp := send(); resp.ErrorCode != int16(messages.ErrorCode_GROUP_ID_NOT_FOUND) || len(resp.Topics) != 0 {
		t.Errorf("an unknown group: %+v", resp)
	}

	*answer = messages.DeleteOffsetsResponse{Error: messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED}
	resp = send()
	if resp.ErrorCode != 0 || len(resp.Topics) != 2 {
		t.Fatalf("a topic refusal: %+v", resp)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != int16(messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED) {
				t.Errorf("a topic refusal: %s/%d has code %d", rt.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
}
