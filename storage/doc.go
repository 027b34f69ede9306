// Package storage holds one partition replica's durable state: its log of
// record batches (Log), the high-watermark checkpoint and the leader-epoch
// cache derived from the log, and the recovery that runs when a log is opened
// after a crash.
//
// OpenWAL stores batches in a github.com/tidwall/wal log, one batch per WAL
// entry, and keeps an in-memory index of them (offsets, sizes, timestamps,
// epochs) rebuilt on open by reading and CRC-checking every entry. Open cuts
// a torn tail off the last segment (a crash during Append) and refuses, with
// an error wrapping ErrCorrupt, anything else that fails a check. Deletion
// from the front (DeleteBefore, ApplyRetention) removes whole segment files.
// While the log is empty its start offset is kept in a small checkpoint file
// next to the segments.
//
// NewMemLog is the in-memory twin used as a model in tests; one conformance
// suite runs against both.
//
// WriteCheckpoint and ReadCheckpoint store one int64 (such as the high
// watermark) atomically and with a checksum.
//
//	log, err := storage.OpenWAL(dir, storage.WALOptions{SegmentBytes: storage.DefaultSegmentBytes}, slog.Default())
//	err = log.Append(batch)                    // fsync'd when it returns
//	batches, err := log.Read(0, 1<<20, log.LogEndOffset())
//
// This package must not import protoactor, consul or any actor code.
package storage
