package broker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// produceAs sends one hand-built idempotent batch of producer 42 with acks=all.
func (tb *testBroker) produceAs(topic string, epoch int16, seq int32, values ...string) *messages.ProduceResponse {
	tb.t.Helper()
	batch := makeBatch(values...)
	record.SetProducer(batch, record.Producer{ID: 42, Epoch: epoch, BaseSequence: seq})
	return tb.ask(&messages.ProduceRequest{Topic: topic, Acks: -1, Records: batch}).(*messages.ProduceResponse)
}

// wantProduced fails unless r is a success at offset base.
func wantProduced(t *testing.T, what string, r *messages.ProduceResponse, base int64) {
	t.Helper()
	if r.Error != messages.ErrorCode_NONE || r.BaseOffset != base {
		t.Fatalf("%s: %v %s at offset %d; want success at offset %d", what, r.Error, r.ErrorMessage, r.BaseOffset, base)
	}
}

// wantRejected fails unless r carries code.
func wantRejected(t *testing.T, what string, r *messages.ProduceResponse, code messages.ErrorCode) {
	t.Helper()
	if r.Error != code || r.BaseOffset != -1 {
		t.Fatalf("%s: %v %q at offset %d; want %v", what, r.Error, r.ErrorMessage, r.BaseOffset, code)
	}
}

func wantLog(t *testing.T, tb *testBroker, topic string, want ...string) {
	t.Helper()
	if got := tb.readAll(topic, 0); !slices.Equal(got, want) {
		t.Fatalf("log holds %q, want %q", got, want)
	}
}

// The partition actor answers each idempotent batch as the sequence window
// decides: duplicates with their original offsets and nothing written, gaps
// with OUT_OF_ORDER_SEQUENCE, older epochs with PRODUCER_FENCED; and after
// a restart it decides the same from the state rebuilt from its log.
func TestIdempotentBatchesThroughThePartitionActor(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, dir, nil)
	tb.createTopic("idem", 1, nil)
	wantProduced(t, "plain batch", tb.produce("idem", 0, 1, "plain"), 0)
	wantProduced(t, "epoch 0 seq 0-1", tb.produceAs("idem", 0, 0, "a0", "a1"), 1)
	wantProduced(t, "epoch 0 seq 2", tb.produceAs("idem", 0, 2, "b"), 3)

	wantProduced(t, "retry of seq 0-1", tb.produceAs("idem", 0, 0, "a0", "a1"), 1)
	wantProduced(t, "retry of seq 2", tb.produceAs("idem", 0, 2, "b"), 3)
	wantRejected(t, "seq 4 after 2", tb.produceAs("idem", 0, 4, "gap"), messages.ErrorCode_OUT_OF_ORDER_SEQUENCE)
	wantRejected(t, "seq 1 overlapping 0-1", tb.produceAs("idem", 0, 1, "overlap"), messages.ErrorCode_OUT_OF_ORDER_SEQUENCE)
	wantRejected(t, "epoch 1 not at seq 0", tb.produceAs("idem", 1, 3, "late"), messages.ErrorCode_OUT_OF_ORDER_SEQUENCE)
	wantProduced(t, "epoch 1 seq 0", tb.produceAs("idem", 1, 0, "c"), 4)
	wantRejected(t, "epoch 0 seq 3", tb.produceAs("idem", 0, 3, "d"), messages.ErrorCode_PRODUCER_FENCED)
	wantRejected(t, "epoch 0 retry of seq 2", tb.produceAs("idem", 0, 2, "b"), messages.ErrorCode_PRODUCER_FENCED)
	wantLog(t, tb, "idem", "plain", "a0", "a1", "b", "c")

	// A new incarnation knows the producer from its snapshot, taken at the
	// clean stop, and the batch headers after it.
	tb.stop()
	snapshot := filepath.Join(dir, "topics", "idem-0", "producer.snapshot")
	first, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatalf("no producer state snapshot after a clean stop: %v", err)
	}
	tb = startTestBroker(t, dir, nil)
	waitFor(t, "partition serving", func() bool { return tb.fetch("idem", 0, 0).Error == messages.ErrorCode_NONE })
	wantProduced(t, "retry of epoch 1 seq 0 after restart", tb.produceAs("idem", 1, 0, "c"), 4)
	wantRejected(t, "epoch 0 after restart", tb.produceAs("idem", 0, 3, "d"), messages.ErrorCode_PRODUCER_FENCED)
	wantRejected(t, "epoch 1 seq 2 after restart", tb.produceAs("idem", 1, 2, "gap"), messages.ErrorCode_OUT_OF_ORDER_SEQUENCE)
	wantProduced(t, "epoch 1 seq 1-2 after restart", tb.produceAs("idem", 1, 1, "e0", "e1"), 5)
	wantProduced(t, "retry of epoch 1 seq 0", tb.produceAs("idem", 1, 0, "c"), 4)
	wantProduced(t, "retry of epoch 1 seq 1-2", tb.produceAs("idem", 1, 1, "e0", "e1"), 5)
	wantLog(t, tb, "idem", "plain", "a0", "a1", "b", "c", "e0", "e1")

	// The same state from the older snapshot and the batches after it
	// (a crash after the first restart), and from the log alone.
	tb.stop()
	for _, setup := range []struct {
		name string
		prep func() error
		gone bool // the snapshot must be removed at the start
	}{
		{"from the older snapshot", func() error { return os.WriteFile(snapshot, first, 0o640) }, false},
		{"from the log alone", func() error { return os.Remove(snapshot) }, false},
		// A snapshot past the log's end (the log lost its tail in a power
		// failure since) is not used, and is removed for good.
		{"with a snapshot past the log's end", func() error {
			return os.WriteFile(snapshot, producerstate.EncodeSnapshot(100, nil), 0o640)
		}, true},
	} {
		if err := setup.prep(); err != nil {
			t.Fatal(err)
		}
		tb = startTestBroker(t, dir, nil)
		waitFor(t, "partition serving", func() bool { return tb.fetch("idem", 0, 0).Error == messages.ErrorCode_NONE })
		if _, err := os.Stat(snapshot); setup.gone && !os.IsNotExist(err) {
			t.Fatalf("%s: the snapshot read at the start is still there (%v)", setup.name, err)
		}
		wantProduced(t, "retry of epoch 1 seq 1-2, "+setup.name, tb.produceAs("idem", 1, 1, "e0", "e1"), 5)
		wantProduced(t, "retry of epoch 1 seq 0, "+setup.name, tb.produceAs("idem", 1, 0, "c"), 4)
		wantRejected(t, "epoch 1 seq 4, "+setup.name, tb.produceAs("idem", 1, 4, "gap"), messages.ErrorCode_OUT_OF_ORDER_SEQUENCE)
		wantRejected(t, "epoch 0, "+setup.name, tb.produceAs("idem", 0, 3, "d"), messages.ErrorCode_PRODUCER_FENCED)
		tb.stop()
	}
	tb = startTestBroker(t, dir, nil)
	waitFor(t, "partition serving", func() bool { return tb.fetch("idem", 0, 0).Error == messages.ErrorCode_NONE })
	wantLog(t, tb, "idem", "plain", "a0", "a1", "b", "c", "e0", "e1")
}
