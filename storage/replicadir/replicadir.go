// Package replicadir is the directory of one partition replica: the files
// it holds besides the log (the topic id it belongs to, the high-watermark
// checkpoint, the producer-state snapshot, corrupt logs kept aside) and
// the few operations the replica needs on them. The log itself, in Log(),
// is storage's.
//
//	dir := replicadir.Dir("/data/topics/orders-0")
//	removedOld, err := dir.Claim(topicID) // a deleted namesake's data goes
//	log, err := storage.OpenWAL(dir.Log(), opts, logger)
package replicadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicemq/sluice/storage/atomicfile"
	"github.com/sluicemq/sluice/storage/datadir"
)

// Dir is the path of a replica's directory.
type Dir string

const (
	topicIDFile          = "topic-id"
	checkpointFile       = "high-watermark"
	producerSnapshotFile = "producer.snapshot"
)

func (d Dir) file(name string) string { return filepath.Join(string(d), name) }

// Log is the directory of the replica's log.
func (d Dir) Log() string { return d.file("log") }

// Checkpoint is the high-watermark checkpoint file.
func (d Dir) Checkpoint() string { return d.file(checkpointFile) }

// Create makes the directory if it is not there.
func (d Dir) Create() error { return os.MkdirAll(string(d), 0o755) }

// TopicID is the id of the topic the directory belongs to.
func (d Dir) TopicID() (string, error) {
	id, err := os.ReadFile(d.file(topicIDFile))
	return string(id), err
}

// Claim makes the directory topicID's: data a deleted topic of the same
// name left there goes (removedOld), and the id is recorded, durably. A
// directory already the topic's is left as it is: rewriting the id at
// every start, with its two fsyncs, is what a restart with thousands of
// partitions would wait on.
func (d Dir) Claim(topicID string) (removedOld bool, err error) {
	id, err := os.ReadFile(d.file(topicIDFile))
	if err == nil && string(id) == topicID {
		return false, nil
	}
	if err == nil {
		if err := os.RemoveAll(string(d)); err != nil {
			return false, err
		}
		removedOld = true
	}
	if err := d.Create(); err != nil {
		return removedOld, err
	}
	return removedOld, datadir.WriteFileAtomic(d.file(topicIDFile), []byte(topicID))
}

// ReadProducerSnapshot returns the producer-state snapshot, or ok false
// when there is none.
func (d Dir) ReadProducerSnapshot() (data []byte, ok bool, err error) {
	data, err = os.ReadFile(d.file(producerSnapshotFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// WriteProducerSnapshot replaces the snapshot atomically, without an
// fsync: a lost snapshot costs a longer replay of the log.
func (d Dir) WriteProducerSnapshot(data []byte) error {
	return atomicfile.Write(d.file(producerSnapshotFile), data, 0o640, false)
}

// RemoveProducerSnapshot deletes the snapshot, durably: a crash must not
// bring back a snapshot of batches the log no longer holds.
func (d Dir) RemoveProducerSnapshot() error {
	if err := os.Remove(d.file(producerSnapshotFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return datadir.SyncDir(string(d))
}

// MoveLogAside renames a corrupt log to log.corrupt-<now> (kept for the
// operator, never deleted) and removes the checkpoint and snapshot that
// described it, so that a fresh log starts in Log(). It returns where the
// log went; a file it could not remove is reported in leftovers.
func (d Dir) MoveLogAside(now time.Time) (aside string, leftovers []error, err error) {
	aside = d.file(fmt.Sprintf("log.corrupt-%d", now.UnixNano()))
	if err := os.Rename(d.Log(), aside); err != nil {
		return "", nil, fmt.Errorf("moving it aside: %w", err)
	}
	for _, f := range []string{d.Checkpoint(), d.file(producerSnapshotFile)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			leftovers = append(leftovers, err)
		}
	}
	return aside, leftovers, nil
}
