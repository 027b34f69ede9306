// Package record encodes, decodes and validates record batches in Kafka's
// RecordBatch v2 byte layout (magic 2), the unit Sluice stores and serves.
//
// A batch is written once by a producer (Builder), has its base offset and
// leader epoch set by the partition leader (SetBaseOffset, SetLeaderEpoch:
// both lie outside the CRC), is stored as is, and is decoded by consumers
// (Records). The broker only calls Validate and reads the Header.
//
//	var b record.Builder
//	b.Reset(record.NoProducer)
//	b.Append(time.Now().UnixMilli(), []byte("key"), []byte("value"), nil)
//	batch := b.Finish()
//
// This package imports only the standard library.
package record
