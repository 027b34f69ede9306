package kafka

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// batch returns a RecordBatch v2 with one record, as a Kafka client writes it.
func batch(t *testing.T) []byte {
	t.Helper()
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	var recs []byte
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	recs = rec.AppendTo(recs)
	b := kmsg.RecordBatch{Magic: 2, NumRecords: 1, Records: recs, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	return raw
}

// A produce batch must be exactly one RecordBatch v2 for a topic a client
// may write; everything else is refused with Kafka's code before any
// leader sees it.
func TestCheckBatch(t *testing.T) {
	good := batch(t)
	if code, why := checkBatch("orders", good, nil); code != 0 {
		t.Fatalf("a good batch: %d %s", code, why)
	}
	v1 := append([]byte(nil), good...)
	v1[16] = 1
	txn := "t1"
	for _, c := range []struct {
		name    string
		topic   string
		records []byte
		txn     *string
		code    int16
	}{
		{"the internal topic", messages.OffsetsTopic, good, nil, errInvalidTopic},
		{"a transaction", "orders", good, &txn, errTransactionsUnknown},
		{"no records", "orders", nil, nil, errCorruptMessage},
		{"message format v1", "orders", v1, nil, errCorruptMessage},
		{"two batches", "orders", append(append([]byte(nil), good...), good...), nil, errInvalidRecord},
		{"a cut batch", "orders", good[:len(good)-1], nil, errInvalidRecord},
	} {
		if code, why := checkBatch(c.topic, c.records, c.txn); code != c.code || why == "" {
			t.Errorf("%s: code %d (%q), want %d", c.name, code, why, c.code)
		}
	}
}
