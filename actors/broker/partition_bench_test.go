package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
)

// BenchmarkPartitionProduce sends one ~1 MiB batch of 1000 records of 1 KiB
// per operation through the broker and partition actors to the WAL (without
// fsync, to measure the actors' and the log's own cost) and waits for the
// answer. Allocations are per request, not per record.
func BenchmarkPartitionProduce(b *testing.B) {
	tb := startTestBroker(b, b.TempDir(), func(c *actors.BrokerConfig) {
		c.OpenLog = func(dir string, tc actors.TopicConfig) (storage.Log, error) {
			return storage.OpenWAL(dir, storage.WALOptions{SegmentBytes: int(tc.SegmentBytes), NoSync: true}, c.Logger)
		}
	})
	tb.createTopic("bench", 1, nil)
	var bld record.Builder
	bld.Reset(record.NoProducer)
	value := bytes.Repeat([]byte{'v'}, 1024)
	for range 1000 {
		bld.Append(time.Now().UnixMilli(), nil, value, nil)
	}
	batch := bld.Finish()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		// The partition rewrites the base offset in place: a copy per request,
		// as a request decoded from the network has its own buffer.
		req := &messages.ProduceRequest{Topic: "bench", Acks: 1, Records: append([]byte(nil), batch...)}
		res, err := tb.system.Root.RequestFuture(tb.pid, req, 10*time.Second).Result()
		if err != nil {
			b.Fatal(err)
		}
		if r := res.(*messages.ProduceResponse); r.Error != messages.ErrorCode_NONE {
			b.Fatal(r.Error, r.ErrorMessage)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}
