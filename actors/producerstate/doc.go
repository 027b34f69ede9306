// Package producerstate is the broker side of Kafka's idempotent producer as
// plain, deterministic Go: per producer id and partition, the epoch and the
// sequence window of the last WindowSize (5) batches that turn a producer's
// retries and failovers into neither duplicates nor reordering (Kafka's
// ProducerStateManager and ProducerAppendInfo, without transactions).
//
// It owns one State per partition replica: the decision for each batch a
// leader is about to append (Append, Duplicate with the original offsets,
// OutOfOrderSequence, ProducerFenced, InvalidBatch), the group-commit view
// (Pending), the rebuild from the log (Replay, Reset, TruncateTo), and the
// memory bound (Expire after ProducerIDExpiration, at most MaxProducerIDs
// ids, least recently updated dropped first; O(WindowSize) per id), and the
// answer to InitProducerId (InitProducer: a new id, or the next epoch of an
// id whose producer lost a batch for good). Nothing
// here does I/O or reads a clock: times are passed in. The partition actor
// converts record headers to Batch and Decisions to error codes.
//
//	st := producerstate.NewState(producerstate.Config{})
//	b := producerstate.Batch{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, BaseSequence: h.BaseSequence, RecordCount: h.RecordCount, MaxTimestamp: h.MaxTimestamp}
//	if d := st.Check(b, now); d.Outcome == producerstate.Append {
//		st.Appended(b, leo, now) // after the write succeeded at offset leo
//	} // Duplicate: answer d.FirstOffset; otherwise answer the error
//
// Where it departs from Kafka:
//
//   - A batch of a producer id with no state here is appended whatever its
//     epoch and sequence (Decision.NewProducer tells). This is what Kafka has
//     done since 2.5 (KIP-360): state is lost to expiry, retention,
//     truncation or an unclean election while the producer lives on, and
//     UNKNOWN_PRODUCER_ID would fail it for nothing. The price is that a
//     retry reaching a partition that lost the state is not recognised.
//   - Expiry counts from the time passed to Appended (the broker's clock),
//     not the batch's MaxTimestamp as Kafka does; Replay takes whatever time
//     its caller passes, usually MaxTimestamp since logs keep no append time.
//   - MaxProducerIDs caps the ids per partition, least recently updated
//     dropped first; Kafka has no such cap (KIP-936 throttles new producer
//     ids per principal instead).
//   - There are no producer state snapshots: a rebuild replays the whole
//     log; TruncateTo is a cheap, conservative approximation of Kafka's
//     truncateAndReload.
//   - An older epoch is ProducerFenced; Kafka 2.7+ reports it on produce as
//     INVALID_PRODUCER_EPOCH.
//   - No transactions: no transactional batches, markers, coordinator epochs
//     or verification.
//
// This package imports only the standard library: not protoactor, storage,
// consul, the network, nor the messages package.
package producerstate
