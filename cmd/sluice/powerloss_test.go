package main

import (
	"path/filepath"
	"testing"

	"github.com/sluicemq/sluice/storage/syncjournal"
)

// powerLoss runs acks=all producers against one broker, kills it with
// kill -9 mid-stream, drops every byte its files held beyond their last
// fsync (syncjournal), restarts it and reads everything back. It returns
// how many acknowledged records were found missing.
func powerLoss(t *testing.T, partitions int32, extra ...string) (acked, lost int) {
	journal := filepath.Join(t.TempDir(), "fsync-journal")
	b := startBrokerEnv(t, []string{syncjournal.Env + "=" + journal}, extra...)
	c := &testCluster{t: t, brokers: map[int32]*brokerProc{0: b}}
	c.admin = newAdmin(t, b.Addr)
	const topic = "power"
	createTopic(t, c.admin, topic, partitions, nil)
	w := startWorkload(t, c, topic, 2)
	w.waitAcks(c, 20000)
	b.kill9()
	loss, err := syncjournal.PowerLoss(b.Data, journal)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("power loss: %d files cut short, %d bytes dropped", loss.Files, loss.Bytes)
	b.start()
	w.stop()
	for p := int32(0); p < partitions; p++ {
		got := map[int64]string{}
		for _, r := range consumeAll(t, b.Addr, topic, p) {
			got[r.Offset] = string(r.Value)
		}
		for off, v := range w.ledger.acked[p] {
			acked++
			if got[off] != v {
				if lost++; lost <= 3 {
					t.Logf("partition %d offset %d: acknowledged %q, the log has %q", p, off, v, got[off])
				}
			}
		}
	}
	t.Logf("%d acknowledged, %d lost", acked, lost)
	return acked, lost
}

// With every acknowledgement behind an fsync, a power failure loses
// nothing acknowledged.
func TestPowerLossKeepsAcknowledgedRecords(t *testing.T) {
	// Small segments: many files, so that an fsync of the wrong one shows.
	if _, lost := powerLoss(t, 2, "--segment-bytes", "65536"); lost > 0 {
		t.Fatalf("%d acknowledged records lost in the power failure", lost)
	}
}

// The same run without fsync must lose acknowledged records: the check
// above can fail.
func TestPowerLossWithoutFsyncLosesRecords(t *testing.T) {
	if acked, lost := powerLoss(t, 2, "--unsafe-no-fsync"); lost == 0 {
		t.Fatalf("no loss among %d records acknowledged without fsync: the power failure took nothing", acked)
	}
}

// Many partitions written at once share the broker's fsync waves (one
// syncfs for the lot): killed in the middle of them and with the unsynced
// bytes dropped, the broker still has every acknowledged record of every
// partition.
func TestPowerLossManyPartitionsSharingWaves(t *testing.T) {
	acked, lost := powerLoss(t, 64, "--segment-bytes", "65536")
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost in the power failure", lost, acked)
	}
}
