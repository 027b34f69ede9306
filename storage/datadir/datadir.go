// Package datadir is a broker's data directory as a whole: the lock that
// keeps a second process out of it, and the identity file that binds it to
// one cluster and one broker id (Kafka's meta.properties).
//
// A broker checks the directory against its metadata store before it
// touches either (Check): a directory that holds data never starts against
// a store of another cluster, or against a store that lost its cluster id,
// because acting on that store's (empty or foreign) metadata would delete
// or overwrite the directory's partitions.
//
//	d, err := datadir.Open("sluice-data") // fails while another process has it
//	defer d.Close()
//	create, err := datadir.Check(d.Meta(), d.HasData(), 3, storeClusterID)
//
// This package imports only the standard library and storage/syncjournal.
package datadir

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicemq/sluice/storage/atomicfile"
)

// MetaFile is the identity file in a data directory.
const MetaFile = "meta.properties"

// lockFile is held with flock while a process uses the directory.
const lockFile = ".lock"

// Meta is what a data directory records about itself at its first start.
type Meta struct {
	ClusterID string
	BrokerID  int32
	// DirectoryID is random, made once per directory: a broker back with
	// another one has a new disk, and the logs it had are gone.
	DirectoryID string
}

// Dir is an open, locked data directory.
type Dir struct {
	path  string
	lock  *os.File
	meta  *Meta
	newID string // the directory id WriteMeta records for a new directory
}

// Errors of Open and Check.
var (
	// ErrLocked: another process has the directory open.
	ErrLocked = errors.New("data directory in use by another process")
	// ErrInconsistentCluster: the directory belongs to another cluster than
	// the metadata store, or the store has lost its cluster id.
	ErrInconsistentCluster = errors.New("data directory and metadata store belong to different clusters")
	// ErrWrongBroker: the directory belongs to another broker id.
	ErrWrongBroker = errors.New("data directory belongs to another broker")
)

// Open creates path if needed, locks it for this process and reads its
// identity file, if any.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(path, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (is another broker running on it?)", ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	d := &Dir{path: path, lock: f, newID: newDirectoryID()}
	if d.meta, err = readMeta(filepath.Join(path, MetaFile)); err != nil {
		d.Close()
		return nil, err
	}
	if d.meta != nil && d.meta.DirectoryID == "" {
		// Written before directory ids existed: give it one now.
		if err := d.WriteMeta(*d.meta); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

func newDirectoryID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// DirectoryID is the directory's id: the recorded one, or the one WriteMeta
// will record.
func (d *Dir) DirectoryID() string {
	if d.meta != nil && d.meta.DirectoryID != "" {
		return d.meta.DirectoryID
	}
	return d.newID
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Meta is the recorded identity; nil before the first start recorded one.
func (d *Dir) Meta() *Meta { return d.meta }

// HasData reports whether the directory holds partition data.
func (d *Dir) HasData() bool {
	entries, err := os.ReadDir(filepath.Join(d.path, "topics"))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			return true
		}
	}
	return false
}

// WriteMeta records m (atomically, fsync'd) as the directory's identity;
// an empty DirectoryID becomes DirectoryID().
func (d *Dir) WriteMeta(m Meta) error {
	if m.DirectoryID == "" {
		m.DirectoryID = d.DirectoryID()
	}
	var b bytes.Buffer
	b.WriteString("# Written by the broker at the first start of this data directory. Do not edit.\n")
	b.WriteString("version=1\n")
	fmt.Fprintf(&b, "cluster.id=%s\n", m.ClusterID)
	fmt.Fprintf(&b, "broker.id=%d\n", m.BrokerID)
	fmt.Fprintf(&b, "directory.id=%s\n", m.DirectoryID)
	if err := WriteFileAtomic(filepath.Join(d.path, MetaFile), b.Bytes()); err != nil {
		return err
	}
	d.meta = &m
	return nil
}

// Close releases the lock.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	err := d.lock.Close() // closing the descriptor drops the flock
	d.lock = nil
	return err
}

func readMeta(path string) (*Meta, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := &Meta{BrokerID: -1}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not key=value", path, line)
		}
		switch strings.TrimSpace(k) {
		case "cluster.id":
			m.ClusterID = strings.TrimSpace(v)
		case "broker.id":
			id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: broker.id %q: %v", path, v, err)
			}
			m.BrokerID = int32(id)
		case "directory.id":
			m.DirectoryID = strings.TrimSpace(v)
		}
	}
	if m.ClusterID == "" || m.BrokerID < 0 {
		return nil, fmt.Errorf("%s: cluster.id or broker.id missing", path)
	}
	return m, nil
}

// Check decides whether a broker with id brokerID may start on a directory
// (its recorded identity meta, nil if none, and whether it holds partition
// data) against a metadata store whose cluster id is storeID ("" if it has
// none). create is set when the store needs a new cluster id: a new
// directory meeting a new store, the start of a new cluster.
func Check(meta *Meta, hasData bool, brokerID int32, storeID string) (create bool, err error) {
	switch {
	case meta != nil && meta.BrokerID != brokerID:
		return false, fmt.Errorf("%w: it was created by broker %d, and this broker was started as %d", ErrWrongBroker, meta.BrokerID, brokerID)
	case meta != nil && storeID == "":
		return false, fmt.Errorf("%w: the data directory belongs to cluster %s, but the metadata store has no cluster id:"+
			" the store lost its data (a restarted -dev Consul agent, a wiped Consul) or the broker points at the wrong one"+
			" (check --consul and --cluster); restore the store from a snapshot rather than start over, which would delete this broker's data",
			ErrInconsistentCluster, meta.ClusterID)
	case meta != nil && storeID != meta.ClusterID:
		return false, fmt.Errorf("%w: the data directory belongs to cluster %s, the metadata store to cluster %s (check --consul and --cluster)",
			ErrInconsistentCluster, meta.ClusterID, storeID)
	case meta == nil && hasData && storeID == "":
		return false, fmt.Errorf("%w: the data directory holds partitions but records no cluster, and the metadata store has no cluster id:"+
			" it may have lost its data; refusing to start a new cluster over existing data", ErrInconsistentCluster)
	}
	return meta == nil && storeID == "", nil
}

// WriteFileAtomic replaces path with data (mode 0644) so that a crash
// leaves either the old or the new content.
func WriteFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644, true)
}

// SyncDir fsyncs a directory, making the entries created or renamed in it
// durable.
func SyncDir(path string) error { return atomicfile.SyncDir(path) }

// producerIDsFile records the end of the last block of producer ids the
// broker was given: where a wiped or restored metadata store cannot take it.
const producerIDsFile = "producer-ids"

// ProducerIDsEnd is the recorded end of the last producer-id block this
// broker was given (0: none yet).
func (d *Dir) ProducerIDsEnd() (int64, error) {
	data, err := os.ReadFile(filepath.Join(d.path, producerIDsFile))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	end, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || end < 0 {
		return 0, fmt.Errorf("%s: %q is not a producer id", producerIDsFile, data)
	}
	return end, nil
}

// RecordProducerIDsEnd records end (fsync'd) before the broker hands out
// ids below it.
func (d *Dir) RecordProducerIDsEnd(end int64) error {
	return WriteFileAtomic(filepath.Join(d.path, producerIDsFile), []byte(strconv.FormatInt(end, 10)+"\n"))
}
