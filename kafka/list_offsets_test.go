package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// ListOffsets asks each partition's leader once, with the client's leader
// epoch from v4 on (-1 before: not checked); an answer's error sets the
// offset, timestamp and epoch to -1.
func TestListOffsetsPerPartition(t *testing.T) {
	var asked []*messages.ListOffsetsRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		lr := req.(*messages.ListOffsetsRequest)
		asked = append(asked, lr)
		if lr.Partition == 1 {
			return &messages.ListOffsetsResponse{Topic: lr.Topic, Partition: 1, Error: messages.ErrorCode_NOT_LEADER,
				Offset: 99, Timestamp: 99, LeaderEpoch: 9}, nil
		}
		return &messages.ListOffsetsResponse{Topic: lr.Topic, Partition: lr.Partition, Offset: 42, Timestamp: lr.Timestamp, LeaderEpoch: 3}, nil
	}), Config{})
	for _, v := range []int16{0, 1, 4, 7} {
		asked = nil
		c := dial(t, addr)
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(v)
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "events"
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch, rp.MaxNumOffsets = p, -1, 3, 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrListOffsetsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		wantEpoch := int32(-1)
		if v >= 4 {
			wantEpoch = 3
		}
		if len(asked) != 2 || asked[0].Timestamp != -1 || asked[0].CurrentLeaderEpoch != wantEpoch {
			t.Fatalf("v%d: the partitions were asked %v", v, asked)
		}
		ps := resp.Topics[0].Partitions
		if v == 0 {
			// Old-style: the offset as a list, none for an error.
			if ps[0].ErrorCode != 0 || len(ps[0].OldStyleOffsets) != 1 || ps[0].OldStyleOffsets[0] != 42 ||
				ps[1].ErrorCode != int16(messages.ErrorCode_NOT_LEADER) || len(ps[1].OldStyleOffsets) != 0 {
				t.Errorf("v0: %+v", ps)
			}
			continue
		}
		if ps[0].ErrorCode != 0 || ps[0].Offset != 42 {
			t.Errorf("v%d partition 0: code %d offset %d", v, ps[0].ErrorCode, ps[0].Offset)
		}
		if ps[1].ErrorCode != int16(messages.ErrorCode_NOT_LEADER) || ps[1].Offset != -1 || ps[1].Timestamp != -1 {
			t.Errorf("v%d partition 1: code %d offset %d timestamp %d", v, ps[1].ErrorCode, ps[1].Offset, ps[1].Timestamp)
		}
	}
}
