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
// A log writes an index snapshot (index_snapshot.go) when it closes its
// WAL; the next open takes the segments it still describes from it instead
// of reading them, and opens the WAL itself only on first use.
//
// Pool bounds the memory a broker's open logs hold: it closes idle and
// least recently used WALs (they reopen on demand) and caps the segment
// size by the number of logs. Syncer runs the fsyncs of all logs of a data
// directory in waves, one syncfs(2) for a large wave (TakeSync hands it a
// log's pending sync).
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
