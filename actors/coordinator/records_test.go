package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// testMetadata is a group with a Kafka client (relay) member and a Sluice
// push member.
func testMetadata() *messages.GroupMetadataValue {
	return &messages.GroupMetadataValue{Generation: 3, Assignor: "range", LeaderId: "kafka-1", Members: []*messages.GroupMemberRecord{
		{MemberId: "kafka-1", ClientId: "franz", SessionTimeoutMs: 45000, RebalanceTimeoutMs: 60000, ProtocolType: "consumer",
			Protocols:       []*messages.GroupProtocol{{Name: "sticky", Metadata: []byte("s")}, {Name: "range", Metadata: []byte("r")}},
			RelayAssignment: []byte("assigned"), InstanceId: "host-a"},
		{MemberId: "sluice-1", ClientId: "pusher", Topics: []string{"orders"}, Assignors: []string{"range"},
			Assignment:  []*messages.TopicPartitions{{Topic: "orders", Partitions: []int32{0, 2}}},
			PushAddress: "127.0.0.1:1", PushId: "p1", PushCredit: 7, Principal: "User:alice"},
	}}
}

func TestGroupRecordsRoundTrip(t *testing.T) {
	in := []groupRecord{
		{Key: &messages.GroupRecordKey{Group: "g"}, Metadata: testMetadata()},
		{Key: &messages.GroupRecordKey{Group: "g", Topic: "t", Partition: 2}, Offset: &messages.OffsetValue{Offset: 42, Metadata: "m", CommitUnixMs: 1234}},
		{Key: &messages.GroupRecordKey{Group: "g", Topic: "t", Partition: 1}, Deleted: true},
		{Key: &messages.GroupRecordKey{Group: "g"}, Deleted: true},
	}
	batch := encodeGroupRecords(in)
	out, next, err := decodeGroupRecords(batch, 0, nil)
	if err != nil || len(out) != 4 || next != 4 {
		t.Fatalf("decode: %v, %d records, next %d", err, len(out), next)
	}
	if !proto.Equal(out[0].Metadata, testMetadata()) || out[0].Legacy {
		t.Errorf("metadata %v", out[0].Metadata)
	}
	if !proto.Equal(out[1].Offset, in[1].Offset) || !proto.Equal(out[1].Key, in[1].Key) {
		t.Errorf("offset %v %v", out[1].Key, out[1].Offset)
	}
	if !out[2].Deleted || out[2].Key.Partition != 1 || !out[3].Deleted || out[3].Key.Topic != "" {
		t.Errorf("deletions %+v %+v", out[2], out[3])
	}
}

// What a Kafka tool reading __consumer_offsets sees: Kafka's keys and
// values, a group's members with their subscriptions and assignments (a
// Sluice member's in the consumer encoding).
func TestGroupRecordsAreKafkas(t *testing.T) {
	batch := encodeGroupRecords([]groupRecord{
		{Key: &messages.GroupRecordKey{Group: "g"}, Metadata: testMetadata()},
		{Key: &messages.GroupRecordKey{Group: "g", Topic: "t", Partition: 2}, Offset: &messages.OffsetValue{Offset: 42, Metadata: "m", CommitUnixMs: 1234}},
	})
	it := record.Records(batch)
	group, _, _ := it.Next()
	offset, _, _ := it.Next()

	var gk kmsg.GroupMetadataKey
	var gv kmsg.GroupMetadataValue
	if err := gk.ReadFrom(group.Key); err != nil || gk.Version != 2 || gk.Group != "g" {
		t.Fatalf("group key %+v %v", gk, err)
	}
	if err := gv.ReadFrom(group.Value); err != nil || gv.Version != 4 || gv.ProtocolType != "consumer" || gv.Generation != 3 ||
		*gv.Protocol != "range" || *gv.Leader != "kafka-1" || len(gv.Members) != 2 {
		t.Fatalf("group value %+v %v", gv, err)
	}
	kafka, sluice := gv.Members[0], gv.Members[1]
	if string(kafka.Subscription) != "r" || string(kafka.Assignment) != "assigned" || *kafka.InstanceID != "host-a" || kafka.SessionTimeoutMillis != 45000 {
		t.Errorf("the Kafka member %+v", kafka)
	}
	var sub kmsg.ConsumerMemberMetadata
	var asg kmsg.ConsumerMemberAssignment
	if err := sub.ReadFrom(sluice.Subscription); err != nil || !slices.Equal(sub.Topics, []string{"orders"}) {
		t.Errorf("the Sluice member's subscription %+v %v", sub, err)
	}
	if err := asg.ReadFrom(sluice.Assignment); err != nil || len(asg.Topics) != 1 || !slices.Equal(asg.Topics[0].Partitions, []int32{0, 2}) {
		t.Errorf("the Sluice member's assignment %+v %v", asg, err)
	}

	var ok kmsg.OffsetCommitKey
	var ov kmsg.OffsetCommitValue
	if err := ok.ReadFrom(offset.Key); err != nil || ok.Version != 1 || ok.Group != "g" || ok.Topic != "t" || ok.Partition != 2 {
		t.Fatalf("offset key %+v %v", ok, err)
	}
	if err := ov.ReadFrom(offset.Value); err != nil || ov.Version != 3 || ov.Offset != 42 || ov.Metadata != "m" ||
		ov.CommitTimestamp != 1234 || ov.LeaderEpoch != -1 {
		t.Fatalf("offset value %+v %v", ov, err)
	}
}

// Records written in the protobuf format of earlier releases are still
// read, marked Legacy; Kafka-format records Sluice did not write (no
// Sluice metadata, an unknown key version) are skipped.
func TestLegacyAndForeignGroupRecords(t *testing.T) {
	var b record.Builder
	b.Reset(record.NoProducer)
	marshal := func(m proto.Message) []byte { out, _ := proto.Marshal(m); return out }
	b.Append(1, marshal(&messages.GroupRecordKey{Group: "old"}), marshal(testMetadata()), nil)
	b.Append(1, marshal(&messages.GroupRecordKey{Group: "old", Topic: "t", Partition: 1}), marshal(&messages.OffsetValue{Offset: 9}), nil)
	b.Append(1, marshal(&messages.GroupRecordKey{Group: "old", Topic: "t", Partition: 2}), nil, nil)
	foreign := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 1}
	b.Append(1, (&kmsg.GroupMetadataKey{Version: 2, Group: "theirs"}).AppendTo(nil), foreign.AppendTo(nil), nil)
	b.Append(1, []byte{0, 9, 0, 1, 'x'}, []byte("?"), nil)
	out, next, err := decodeGroupRecords(append([]byte(nil), b.Finish()...), 0, nil)
	if err != nil || next != 5 || len(out) != 3 {
		t.Fatalf("decode: %v, next %d, %d records", err, next, len(out))
	}
	if !out[0].Legacy || !proto.Equal(out[0].Metadata, testMetadata()) || out[1].Offset.GetOffset() != 9 || !out[2].Deleted {
		t.Errorf("legacy records %+v", out)
	}
}

// A consumer-protocol group's record is Kafka's ConsumerGroupMetadataKey
// v3 and ConsumerGroupMetadataValue v0 (the epoch), with Sluice's group in
// a tagged field; a foreign value of that key (no tagged field) is skipped.
func TestConsumerGroupRecordRoundTrip(t *testing.T) {
	v := &messages.ConsumerGroupValue{Epoch: 7, AssignmentEpoch: 7, Assignor: "uniform", Counts: map[string]int32{"t": 3},
		Members: []*messages.ConsumerGroupMemberValue{{MemberId: "m", Epoch: 7, Topics: []string{"t"},
			Assigned: []*messages.TopicPartitions{{Topic: "t", Partitions: []int32{0, 1, 2}}}, AssignedSince: []int32{3, 3, 7}}}}
	in := []groupRecord{
		{Key: &messages.GroupRecordKey{Group: "cg"}, ConsumerGroup: true, Consumer: v},
		{Key: &messages.GroupRecordKey{Group: "cg"}, ConsumerGroup: true, Deleted: true},
	}
	key, value := encodeGroupRecord(in[0], 1)
	if want := []byte{0, 3, 0, 2, 'c', 'g'}; string(key) != string(want) {
		t.Fatalf("key % x, want % x", key, want)
	}
	if value[0] != 0 || value[1] != 0 || value[5] != 7 {
		t.Fatalf("value starts % x: want version 0, epoch 7", value[:6])
	}
	out, _, err := decodeGroupRecords(encodeGroupRecords(in), 0, nil)
	if err != nil || len(out) != 2 || !out[0].ConsumerGroup || !proto.Equal(out[0].Consumer, v) || !out[1].Deleted || !out[1].ConsumerGroup {
		t.Fatalf("decoded %+v, %v", out, err)
	}
	if _, ok := decodeGroupRecord(key, []byte{0, 0, 0, 0, 0, 7, 0}); ok {
		t.Error("a value without Sluice's tagged field was read as Sluice's")
	}
}

// Any key and value are read without a panic.
func FuzzDecodeGroupRecord(f *testing.F) {
	key, value := encodeGroupRecord(groupRecord{Key: &messages.GroupRecordKey{Group: "g"}, Metadata: testMetadata()}, 1)
	f.Add(key, value)
	key, value = encodeGroupRecord(groupRecord{Key: &messages.GroupRecordKey{Group: "g", Topic: "t"}, Offset: &messages.OffsetValue{Offset: 1}}, 1)
	f.Add(key, value)
	f.Add([]byte{0x0a, 1, 'g'}, []byte{8, 1})
	key, value = encodeGroupRecord(groupRecord{Key: &messages.GroupRecordKey{Group: "g"}, ConsumerGroup: true,
		Consumer: &messages.ConsumerGroupValue{Epoch: 2}}, 1)
	f.Add(key, value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if gr, ok := decodeGroupRecord(key, value); ok && (gr.Key == nil || gr.Key.Group == "") {
			t.Fatalf("a record without a group: %+v", gr)
		}
	})
}
