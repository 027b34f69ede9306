package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Any bytes a peer sends are read as a frame, a header and a request body
// without a panic; what does not parse is an error.
func FuzzRequestFrame(f *testing.F) {
	for _, v := range []int16{0, 1, 4, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		topic := "orders"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		f.Add(frameRequest(req, 1))
	}
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		f.Add(frameRequest(req, 2))
	}
	for _, v := range []int16{3, 9, 11} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Acks = -1
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: []byte{0, 1, 2}}}}}
		f.Add(frameRequest(req, 3))
	}
	for _, v := range []int16{4, 7, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 5, PartitionMaxBytes: 1 << 20}}}}
		f.Add(frameRequest(req, 4))
	}
	for _, v := range []int16{1, 6, 7} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1 - int64(v/7)*2}}}}
		f.Add(frameRequest(req, 5))
	}
	// Group requests with static membership, and OffsetDelete.
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(7)
	join.Group, join.InstanceID, join.ProtocolType = "g", kmsg.StringPtr("i-1"), "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	f.Add(frameRequest(join, 6))
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.SetVersion(4)
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("i-1")}}
	f.Add(frameRequest(leave, 7))
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	f.Add(frameRequest(del, 8))
	// Oversized and repeated fields: commit metadata far above the limit
	// (and above what an int16 length can say), one partition named many
	// times.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(8)
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 1, Metadata: kmsg.StringPtr(string(make([]byte, 40_000)))}}}}
	f.Add(frameRequest(commit, 9))
	repeated := kmsg.NewPtrFetchRequest()
	repeated.SetVersion(11)
	repeated.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: make([]kmsg.FetchRequestTopicPartition, 2000)}}
	f.Add(frameRequest(repeated, 10))
	// Every served API at its oldest and newest version, empty.
	for _, key := range apiKeys() {
		for _, v := range []int16{apis[key].versions.min, apis[key].versions.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			f.Add(frameRequest(req, 11))
		}
	}
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		frame, err := readFrame(bytes.NewReader(data), 1<<20)
		if err != nil {
			return
		}
		h, body, err := parseHeader(frame)
		if err != nil {
			return
		}
		if _, ok := apis[h.key]; !ok {
			return
		}
		if req, err := decodeRequest(h, body); err == nil {
			_ = entries(req)
		}
	})
}
