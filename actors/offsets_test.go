package actors

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

// Kafka places groups by abs(String.hashCode) % partitions; these hash
// values and partitions were computed with Java's String.hashCode.
func TestGroupPartitionMatchesKafka(t *testing.T) {
	for _, c := range []struct {
		s    string
		hash int32
	}{
		{"", 0},
		{"a", 97},
		{"group", 98629247},
		{"my-consumer-group", 1513705513},
		{"polygenelubricants", -2147483648},
		{"é😀", 1996812},
	} {
		if h := javaStringHash(c.s); h != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.s, h, c.hash)
		}
	}
	if p := GroupPartition("polygenelubricants", 50); p != 0 {
		t.Errorf("MinInt32 hash maps to %d, want 0", p)
	}
	if p := GroupPartition("my-consumer-group", 50); p != 13 {
		t.Errorf("partition %d", p)
	}
}

func TestGroupRecordsRoundTrip(t *testing.T) {
	in := []groupRecord{
		{Key: &messages.GroupRecordKey{Group: "g"}, Metadata: &messages.GroupMetadataValue{Generation: 3, Assignor: "range"}},
		{Key: &messages.GroupRecordKey{Group: "g", Topic: "t", Partition: 2}, Offset: &messages.OffsetValue{Offset: 42}},
		{Key: &messages.GroupRecordKey{Group: "g", Topic: "t", Partition: 1}, Deleted: true},
	}
	batch := encodeGroupRecords(in)
	out, next, err := decodeGroupRecords(batch, 0, nil)
	if err != nil || len(out) != 3 || next != 3 {
		t.Fatalf("decode: %v, %d records, next %d", err, len(out), next)
	}
	if out[0].Metadata.GetGeneration() != 3 || out[1].Offset.GetOffset() != 42 || !out[2].Deleted || out[2].Key.Partition != 1 {
		t.Fatalf("decoded %+v", out)
	}
}
