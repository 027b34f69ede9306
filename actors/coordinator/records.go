package coordinator

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// The records of actors.OffsetsTopic are in Kafka's own format, so that
// the tools that read __consumer_offsets to follow groups (Burrow, Kafka's
// offsets formatter, kcat decoders) read Sluice's too:
//
//   - a committed offset: key OffsetCommitKey v1 (group, topic,
//     partition), value OffsetCommitValue v3 (offset, leader epoch -1,
//     metadata, commit timestamp);
//   - a group's metadata: key GroupMetadataKey v2 (group), value
//     GroupMetadataValue v4: Kafka's fields (protocol type, generation,
//     protocol, leader, members with their subscriptions and assignments,
//     a Sluice member's in Kafka's consumer encoding), and the rest of
//     Sluice's GroupMetadataValue (push targets, credits, principals, the
//     other protocols of a relay member) in tagged field
//     sluiceMetadataTag, which Kafka's readers skip and Sluice reads back;
//   - a group of Kafka's consumer protocol (KIP-848): key
//     ConsumerGroupMetadataKey v3 (group), value ConsumerGroupMetadataValue
//     v0 (the group epoch) with the whole group, Sluice's
//     ConsumerGroupValue, in tagged field sluiceMetadataTag (Kafka spreads
//     it over five more record types; one record keeps a change atomic);
//   - a deletion: the key with no value.
//
// Records written before this format (protobuf keys and values) are still
// read: a protobuf key starts with byte 0x0a, a Kafka key with its int16
// version's zero high byte.

// sluiceMetadataTag is the tagged field of a GroupMetadataValue that holds
// Sluice's own GroupMetadataValue.
const sluiceMetadataTag = 10_000

// The key and value versions written.
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 4
	consumerKeyVersion = 3
)

// groupRecord is one decoded record of actors.OffsetsTopic: a group's metadata
// or one committed offset; Value nil means deleted.
type groupRecord struct {
	Key      *messages.GroupRecordKey
	Metadata *messages.GroupMetadataValue
	Offset   *messages.OffsetValue
	Deleted  bool
	// Legacy is set on a record read in the protobuf format.
	Legacy bool
	// ConsumerGroup marks the record of a consumer-protocol group, whose
	// value is Consumer (nil when Deleted).
	ConsumerGroup bool
	Consumer      *messages.ConsumerGroupValue
}

// encodeGroupRecords builds one batch holding the records in order.
func encodeGroupRecords(recs []groupRecord) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	now := time.Now().UnixMilli()
	for _, r := range recs {
		key, value := encodeGroupRecord(r, now)
		b.Append(now, key, value, nil)
	}
	return append([]byte(nil), b.Finish()...)
}

// encodeGroupRecord is one record's key and value (nil: a deletion).
func encodeGroupRecord(r groupRecord, now int64) (key, value []byte) {
	if r.ConsumerGroup {
		key = binary.BigEndian.AppendUint16(nil, consumerKeyVersion)
		key = appendString(key, r.Key.Group)
		if !r.Deleted && r.Consumer != nil {
			own, _ := proto.Marshal(r.Consumer)
			value = binary.BigEndian.AppendUint16(nil, 0)
			value = binary.BigEndian.AppendUint32(value, uint32(r.Consumer.Epoch))
			value = binary.AppendUvarint(value, 1) // one tagged field
			value = binary.AppendUvarint(value, sluiceMetadataTag)
			value = binary.AppendUvarint(value, uint64(len(own)))
			value = append(value, own...)
		}
		return key, value
	}
	if r.Key.Topic == "" {
		k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: r.Key.Group}
		key = k.AppendTo(nil)
		if !r.Deleted && r.Metadata != nil {
			value = kafkaGroupValue(r.Metadata, now).AppendTo(nil)
		}
		return key, value
	}
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: r.Key.Group, Topic: r.Key.Topic, Partition: r.Key.Partition}
	key = k.AppendTo(nil)
	if !r.Deleted && r.Offset != nil {
		v := kmsg.OffsetCommitValue{Version: offsetValueVersion, Offset: r.Offset.Offset, LeaderEpoch: -1,
			Metadata: r.Offset.Metadata, CommitTimestamp: r.Offset.CommitUnixMs}
		value = v.AppendTo(nil)
	}
	return key, value
}

// kafkaGroupValue is m as Kafka writes a group's metadata, with m itself
// in a tagged field.
func kafkaGroupValue(m *messages.GroupMetadataValue, now int64) *kmsg.GroupMetadataValue {
	v := &kmsg.GroupMetadataValue{Version: groupValueVersion, ProtocolType: "consumer", Generation: m.Generation,
		CurrentStateTimestamp: now}
	if m.Assignor != "" {
		v.Protocol = kmsg.StringPtr(m.Assignor)
	}
	if m.LeaderId != "" {
		v.Leader = kmsg.StringPtr(m.LeaderId)
	}
	for _, mem := range m.Members {
		km := kmsg.GroupMetadataValueMember{MemberID: mem.MemberId, ClientID: mem.ClientId,
			RebalanceTimeoutMillis: mem.RebalanceTimeoutMs, SessionTimeoutMillis: mem.SessionTimeoutMs}
		if mem.InstanceId != "" {
			km.InstanceID = kmsg.StringPtr(mem.InstanceId)
		}
		if mem.ProtocolType != "" {
			// A Kafka client: what it sent and what its leader gave it.
			v.ProtocolType = mem.ProtocolType
			for _, p := range mem.Protocols {
				if p.Name == m.Assignor {
					km.Subscription = p.Metadata
				}
			}
			km.Assignment = mem.RelayAssignment
		} else {
			// A Sluice member, in Kafka's consumer encoding.
			sub := kmsg.ConsumerMemberMetadata{Version: 0, Topics: mem.Topics}
			km.Subscription = sub.AppendTo(nil)
			var a kmsg.ConsumerMemberAssignment
			for _, tp := range mem.Assignment {
				a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic, Partitions: tp.Partitions})
			}
			km.Assignment = a.AppendTo(nil)
		}
		v.Members = append(v.Members, km)
	}
	own, _ := proto.Marshal(withoutKafkaFields(m))
	v.UnknownTags.Set(sluiceMetadataTag, own)
	return v
}

// withoutKafkaFields is a copy of m without what Kafka's fields of its
// value hold already (a Sluice member's topics and assignment, a Kafka
// member's chosen protocol metadata and assignment), so that a group's
// record is not twice its size; withKafkaFields puts them back.
func withoutKafkaFields(m *messages.GroupMetadataValue) *messages.GroupMetadataValue {
	c := proto.CloneOf(m)
	for _, mem := range c.Members {
		if mem.ProtocolType == "" {
			mem.Topics, mem.Assignment = nil, nil
			continue
		}
		mem.RelayAssignment = nil
		for _, p := range mem.Protocols {
			if p.Name == m.Assignor {
				p.Metadata = nil
			}
		}
	}
	return c
}

// withKafkaFields fills own (read from the tagged field) back from the
// Kafka fields of v; it reports whether they fit (the same members).
func withKafkaFields(own *messages.GroupMetadataValue, v *kmsg.GroupMetadataValue) bool {
	if len(own.Members) != len(v.Members) {
		return false
	}
	for i, mem := range own.Members {
		km := v.Members[i]
		if km.MemberID != mem.MemberId {
			return false
		}
		if mem.ProtocolType != "" {
			mem.RelayAssignment = km.Assignment
			for _, p := range mem.Protocols {
				if p.Name == own.Assignor {
					p.Metadata = km.Subscription
				}
			}
			continue
		}
		var sub kmsg.ConsumerMemberMetadata
		var asg kmsg.ConsumerMemberAssignment
		if sub.ReadFrom(km.Subscription) != nil || asg.ReadFrom(km.Assignment) != nil {
			return false
		}
		mem.Topics = sub.Topics
		for _, tp := range asg.Topics {
			mem.Assignment = append(mem.Assignment, &messages.TopicPartitions{Topic: tp.Topic, Partitions: tp.Partitions})
		}
	}
	return true
}

// decodeGroupRecords appends the records of batch at or after from to dst;
// records it cannot decode are skipped (they are not ours to interpret).
func decodeGroupRecords(batch []byte, from int64, dst []groupRecord) ([]groupRecord, int64, error) {
	h, err := record.CheckCRC(batch)
	if err != nil {
		return dst, from, err
	}
	it := record.Records(batch)
	for {
		r, ok, err := it.Next()
		if err != nil {
			return dst, from, err
		}
		if !ok {
			break
		}
		if h.BaseOffset+int64(r.OffsetDelta) < from {
			continue
		}
		gr, ok := decodeGroupRecord(r.Key, r.Value)
		if ok {
			dst = append(dst, gr)
		}
	}
	return dst, h.NextOffset(), nil
}

// decodeGroupRecord reads one record in Kafka's format or the protobuf
// one; ok is false for a record that is not a group's.
func decodeGroupRecord(key, value []byte) (groupRecord, bool) {
	if len(key) > 0 && key[0] == 0x0a {
		return decodeLegacyRecord(key, value)
	}
	if len(key) < 2 {
		return groupRecord{}, false
	}
	switch version := int16(key[0])<<8 | int16(key[1]); version {
	case consumerKeyVersion:
		return decodeConsumerGroupRecord(key, value)
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil || k.Group == "" {
			return groupRecord{}, false
		}
		gr := groupRecord{Key: &messages.GroupRecordKey{Group: k.Group, Topic: k.Topic, Partition: k.Partition}, Deleted: value == nil}
		if !gr.Deleted {
			var v kmsg.OffsetCommitValue
			if v.ReadFrom(value) != nil {
				return groupRecord{}, false
			}
			gr.Offset = &messages.OffsetValue{Offset: v.Offset, Metadata: v.Metadata, CommitUnixMs: v.CommitTimestamp}
		}
		return gr, true
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) != nil || k.Group == "" {
			return groupRecord{}, false
		}
		gr := groupRecord{Key: &messages.GroupRecordKey{Group: k.Group}, Deleted: value == nil}
		if !gr.Deleted {
			var v kmsg.GroupMetadataValue
			if v.ReadFrom(value) != nil {
				return groupRecord{}, false
			}
			var own []byte
			found := false
			v.UnknownTags.Each(func(tag uint32, b []byte) {
				if tag == sluiceMetadataTag {
					own, found = b, true
				}
			})
			gr.Metadata = &messages.GroupMetadataValue{}
			if !found || proto.Unmarshal(own, gr.Metadata) != nil || !withKafkaFields(gr.Metadata, &v) {
				return groupRecord{}, false // not written by Sluice
			}
		}
		return gr, true
	}
	return groupRecord{}, false
}

// decodeLegacyRecord reads a record in the protobuf format of earlier
// releases.
func decodeLegacyRecord(key, value []byte) (groupRecord, bool) {
	k := &messages.GroupRecordKey{}
	if proto.Unmarshal(key, k) != nil || k.Group == "" {
		return groupRecord{}, false
	}
	gr := groupRecord{Key: k, Deleted: value == nil, Legacy: true}
	if gr.Deleted {
		return gr, true
	}
	if k.Topic == "" {
		gr.Metadata = &messages.GroupMetadataValue{}
		if proto.Unmarshal(value, gr.Metadata) != nil {
			return groupRecord{}, false
		}
		return gr, true
	}
	gr.Offset = &messages.OffsetValue{}
	if proto.Unmarshal(value, gr.Offset) != nil {
		return groupRecord{}, false
	}
	return gr, true
}

// appendString appends s as a Kafka (non-flexible) string.
func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// decodeConsumerGroupRecord reads a consumer-protocol group's record:
// the key's group, and the value's tagged field with Sluice's group.
func decodeConsumerGroupRecord(key, value []byte) (groupRecord, bool) {
	if len(key) < 4 || int(binary.BigEndian.Uint16(key[2:])) != len(key)-4 || len(key) == 4 {
		return groupRecord{}, false
	}
	gr := groupRecord{Key: &messages.GroupRecordKey{Group: string(key[4:])}, ConsumerGroup: true, Deleted: value == nil}
	if gr.Deleted {
		return gr, true
	}
	if len(value) < 6 || binary.BigEndian.Uint16(value) != 0 {
		return groupRecord{}, false
	}
	rest := value[6:]
	tags, n := binary.Uvarint(rest)
	if n <= 0 {
		return groupRecord{}, false
	}
	rest = rest[n:]
	for range tags {
		tag, n := binary.Uvarint(rest)
		if n <= 0 {
			return groupRecord{}, false
		}
		rest = rest[n:]
		size, n := binary.Uvarint(rest)
		if n <= 0 || size > uint64(len(rest)-n) {
			return groupRecord{}, false
		}
		field := rest[n : n+int(size)]
		rest = rest[n+int(size):]
		if tag == sluiceMetadataTag {
			gr.Consumer = &messages.ConsumerGroupValue{}
			if proto.Unmarshal(field, gr.Consumer) != nil {
				return groupRecord{}, false
			}
			return gr, true
		}
	}
	return groupRecord{}, false // not written by Sluice
}
