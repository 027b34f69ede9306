package coordinator

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

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
