package coordinator

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// groupRecord is one decoded record of actors.OffsetsTopic: a group's metadata
// or one committed offset; Value nil means deleted.
type groupRecord struct {
	Key      *messages.GroupRecordKey
	Metadata *messages.GroupMetadataValue
	Offset   *messages.OffsetValue
	Deleted  bool
}

// encodeGroupRecords builds one batch holding the records in order.
func encodeGroupRecords(recs []groupRecord) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	now := time.Now().UnixMilli()
	for _, r := range recs {
		key, _ := proto.Marshal(r.Key)
		var value []byte
		switch {
		case r.Deleted:
		case r.Metadata != nil:
			value, _ = proto.Marshal(r.Metadata)
		case r.Offset != nil:
			value, _ = proto.Marshal(r.Offset)
		}
		b.Append(now, key, value, nil)
	}
	return append([]byte(nil), b.Finish()...)
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
		key := &messages.GroupRecordKey{}
		if proto.Unmarshal(r.Key, key) != nil || key.Group == "" {
			continue
		}
		gr := groupRecord{Key: key, Deleted: r.Value == nil}
		if !gr.Deleted {
			if key.Topic == "" {
				gr.Metadata = &messages.GroupMetadataValue{}
				if proto.Unmarshal(r.Value, gr.Metadata) != nil {
					continue
				}
			} else {
				gr.Offset = &messages.OffsetValue{}
				if proto.Unmarshal(r.Value, gr.Offset) != nil {
					continue
				}
			}
		}
		dst = append(dst, gr)
	}
	return dst, h.NextOffset(), nil
}
