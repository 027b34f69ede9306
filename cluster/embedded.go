package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/storage/datadir"
)

// Embedded is the single-node backend: one broker, always the controller,
// with metadata kept in memory and persisted to a file in its directory
// after every change.
type Embedded struct {
	path    string
	secPath string // the security record, beside path (see embeddedSecurityFile)

	mu          sync.Mutex
	snap        *Snapshot
	epoch       int64
	nextPID     int64
	brokerEpoch int64
	changed     chan struct{} // closed and replaced on every change
	self        Broker
	closed      bool
	resigned    bool
	evicted     chan struct{} // never closed: one process owns the directory
}

var _ Backend = (*Embedded)(nil)

const embeddedFile = "cluster.pb"

// embeddedSecurityFile holds the security record: an 8-byte big-endian
// version, then the messages.SecurityRecord. It is a file of its own since
// messages.ClusterSnapshot has no field for it.
const embeddedSecurityFile = "security.pb"

// OpenEmbedded opens (or creates) the metadata kept in dir for the single
// broker self. A new store has no cluster id until CreateClusterID.
func OpenEmbedded(dir string, self Broker) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e := &Embedded{path: filepath.Join(dir, embeddedFile), secPath: filepath.Join(dir, embeddedSecurityFile),
		self: self, changed: make(chan struct{}), evicted: make(chan struct{})}
	file := &messages.ClusterSnapshot{}
	data, err := os.ReadFile(e.path)
	switch {
	case os.IsNotExist(err):
		file.NextProducerId = 1
	case err != nil:
		return nil, err
	default:
		if err := proto.Unmarshal(data, file); err != nil {
			return nil, fmt.Errorf("cluster metadata %s is unreadable: %w", e.path, err)
		}
	}
	e.snap = &Snapshot{
		Index:      file.Index,
		ClusterID:  file.ClusterId,
		Topics:     map[string]*messages.TopicRecord{},
		Partitions: map[TopicPartition]Partition{},
		Deleted:    map[string]*messages.TopicDeletion{},
		Controller: Controller{ID: -1},
	}
	for _, t := range file.Topics {
		e.snap.Topics[t.Name] = t
	}
	for _, d := range file.DeletedTopics {
		e.snap.Deleted[d.TopicId] = d
	}
	for _, p := range file.Partitions {
		e.snap.Partitions[TopicPartition{p.Topic, p.Partition}] = Partition{State: p, Version: file.Index}
	}
	// No file (a store from before security records): none stored, version 0.
	if e.snap.Security, e.snap.SecurityVersion, err = readSecurity(e.secPath); err != nil {
		return nil, err
	}
	e.epoch = file.ControllerEpoch
	e.nextPID = max(file.NextProducerId, 1)
	e.brokerEpoch = file.BrokerEpoch
	return e, e.persistLocked()
}

// NewID returns a random 128-bit id in hex.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// NewTopicID returns a fresh random topic id.
func NewTopicID() string { return NewID() }

func (e *Embedded) persistLocked() error {
	file := &messages.ClusterSnapshot{
		Index:           e.snap.Index,
		ClusterId:       e.snap.ClusterID,
		ControllerEpoch: e.epoch,
		NextProducerId:  e.nextPID,
		BrokerEpoch:     e.brokerEpoch,
	}
	for _, t := range e.snap.Topics {
		file.Topics = append(file.Topics, t)
	}
	for _, d := range e.snap.Deleted {
		file.DeletedTopics = append(file.DeletedTopics, d)
	}
	for _, p := range e.snap.Partitions {
		file.Partitions = append(file.Partitions, p.State)
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(file)
	if err != nil {
		return err
	}
	return datadir.WriteFileAtomic(e.path, data)
}

// readSecurity reads the security file at path; nil and version 0 when
// there is none.
func readSecurity(path string) (*messages.SecurityRecord, uint64, error) {
	data, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		return nil, 0, nil
	case err != nil:
		return nil, 0, err
	case len(data) < 8:
		return nil, 0, fmt.Errorf("security record %s is unreadable: %d bytes, shorter than its version", path, len(data))
	}
	version := binary.BigEndian.Uint64(data)
	if version == 0 {
		// 0 means "none stored": a stored record never has it.
		return nil, 0, fmt.Errorf("security record %s is unreadable: version 0", path)
	}
	rec := &messages.SecurityRecord{}
	if err := proto.Unmarshal(data[8:], rec); err != nil {
		return nil, 0, fmt.Errorf("security record %s is unreadable: %w", path, err)
	}
	return rec, version, nil
}

// writeSecurityLocked persists the snapshot's security record, atomically
// and durably like the store's own file.
func (e *Embedded) writeSecurityLocked() error {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(e.snap.Security)
	if err != nil {
		return err
	}
	data := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(rec)), e.snap.SecurityVersion)
	return datadir.WriteFileAtomic(e.secPath, append(data, rec...))
}

// mutate applies fn to a copy of the snapshot, persists it and publishes it.
func (e *Embedded) mutate(fn func(next *Snapshot) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	next := &Snapshot{
		Index:      e.snap.Index + 1,
		ClusterID:  e.snap.ClusterID,
		Topics:     make(map[string]*messages.TopicRecord, len(e.snap.Topics)),
		Partitions: make(map[TopicPartition]Partition, len(e.snap.Partitions)),
		Deleted:    make(map[string]*messages.TopicDeletion, len(e.snap.Deleted)),
		Controller: e.snap.Controller,
		// Records are never changed in place: sharing them is safe.
		Security:        e.snap.Security,
		SecurityVersion: e.snap.SecurityVersion,
	}
	for k, v := range e.snap.Topics {
		next.Topics[k] = v
	}
	for k, v := range e.snap.Deleted {
		next.Deleted[k] = v
	}
	for k, v := range e.snap.Partitions {
		next.Partitions[k] = v
	}
	if err := fn(next); err != nil {
		return err
	}
	prev := e.snap
	e.snap = next
	if err := e.persistLocked(); err != nil {
		e.snap = prev
		return err
	}
	// The security file is written last, as the commit point: a failure or
	// crash before it leaves only a larger index in the store's file, and
	// an index that moves without a change is allowed.
	if next.SecurityVersion != prev.SecurityVersion {
		if err := e.writeSecurityLocked(); err != nil {
			e.snap = prev
			return err
		}
	}
	close(e.changed)
	e.changed = make(chan struct{})
	return nil
}

// CreateClusterID implements MetadataStore.
func (e *Embedded) CreateClusterID(ctx context.Context) (string, error) {
	e.mu.Lock()
	id := e.snap.ClusterID
	e.mu.Unlock()
	if id != "" {
		return id, nil
	}
	err := e.mutate(func(next *Snapshot) error {
		if next.ClusterID == "" {
			next.ClusterID = NewID()
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snap.ClusterID, nil
}

// Load implements MetadataStore.
func (e *Embedded) Load(ctx context.Context) (*Snapshot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	return e.snap, nil
}

// Watch implements MetadataStore.
func (e *Embedded) Watch(ctx context.Context, afterIndex uint64) (*Snapshot, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, ErrClosed
		}
		snap, changed := e.snap, e.changed
		e.mu.Unlock()
		if snap.Index > afterIndex {
			return snap, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, ctx.Err()
		}
	}
}

// CreateTopic implements MetadataStore.
func (e *Embedded) CreateTopic(ctx context.Context, f Fence, t *messages.TopicRecord, parts []*messages.PartitionState) error {
	return e.mutate(func(next *Snapshot) error {
		if _, ok := next.Topics[t.Name]; ok {
			return ErrTopicExists
		}
		next.Topics[t.Name] = t
		for _, p := range parts {
			next.Partitions[TopicPartition{p.Topic, p.Partition}] = Partition{State: p, Version: next.Index}
		}
		return nil
	})
}

// DeleteTopic implements MetadataStore.
func (e *Embedded) DeleteTopic(ctx context.Context, f Fence, name string) error {
	return e.mutate(func(next *Snapshot) error {
		t, ok := next.Topics[name]
		if !ok {
			return ErrTopicNotFound
		}
		delete(next.Topics, name)
		for p := int32(0); p < t.Partitions; p++ {
			delete(next.Partitions, TopicPartition{name, p})
		}
		next.Deleted[t.TopicId] = &messages.TopicDeletion{Name: name, TopicId: t.TopicId, DeletedUnixMs: time.Now().UnixMilli()}
		return nil
	})
}

// UpdateTopic implements MetadataStore.
func (e *Embedded) UpdateTopic(ctx context.Context, f Fence, prev, next *messages.TopicRecord, added []*messages.PartitionState) error {
	if prev.Name != next.Name {
		return fmt.Errorf("cannot rename topic %q to %q", prev.Name, next.Name)
	}
	return e.mutate(func(snap *Snapshot) error {
		cur, ok := snap.Topics[prev.Name]
		switch {
		case !ok:
			return fmt.Errorf("%w: %q", ErrTopicNotFound, prev.Name)
		case !proto.Equal(cur, prev):
			return fmt.Errorf("%w: topic %q changed", ErrConflict, prev.Name)
		}
		snap.Topics[next.Name] = next
		for _, p := range added {
			snap.Partitions[TopicPartition{p.Topic, p.Partition}] = Partition{State: p, Version: snap.Index}
		}
		return nil
	})
}

// UpdatePartitions implements MetadataStore.
func (e *Embedded) UpdatePartitions(ctx context.Context, f Fence, updates []PartitionUpdate) error {
	return e.mutate(func(next *Snapshot) error {
		for _, u := range updates {
			tp := TopicPartition{u.State.Topic, u.State.Partition}
			cur, ok := next.Partitions[tp]
			if !ok {
				return fmt.Errorf("%w: %s does not exist", ErrConflict, tp)
			}
			if cur.Version != u.ExpectVersion {
				return fmt.Errorf("%w: %s is at version %d, not %d", ErrConflict, tp, cur.Version, u.ExpectVersion)
			}
		}
		for _, u := range updates {
			next.Partitions[TopicPartition{u.State.Topic, u.State.Partition}] = Partition{State: u.State, Version: next.Index}
		}
		return nil
	})
}

// AllocateProducerIDs implements MetadataStore.
func (e *Embedded) AllocateProducerIDs(ctx context.Context, f Fence, count, atLeast int64) (int64, error) {
	var first, was int64
	err := e.mutate(func(next *Snapshot) error {
		was = e.nextPID
		first = max(e.nextPID, atLeast)
		e.nextPID = first + count
		return nil
	})
	if err != nil {
		e.mu.Lock()
		e.nextPID = was
		e.mu.Unlock()
	}
	return first, err
}

// UpdateSecurity implements MetadataStore. Like every embedded write it
// ignores the fence: the single broker is always the controller. The
// version is a counter kept in the security file.
func (e *Embedded) UpdateSecurity(ctx context.Context, f Fence, rec *messages.SecurityRecord, expectVersion uint64) error {
	if rec == nil {
		rec = &messages.SecurityRecord{}
	}
	// A copy: snapshots share the record, so the caller must not be able to
	// change it behind them.
	rec = proto.Clone(rec).(*messages.SecurityRecord)
	return e.mutate(func(next *Snapshot) error {
		switch {
		case next.SecurityVersion == expectVersion:
		case expectVersion == 0:
			return fmt.Errorf("%w: a security record is already stored", ErrConflict)
		default:
			return fmt.Errorf("%w: the security record is at version %d, not %d", ErrConflict, next.SecurityVersion, expectVersion)
		}
		next.Security, next.SecurityVersion = rec, next.SecurityVersion+1
		return nil
	})
}

// Register implements Membership: the single broker is always alive; each
// Register is a new start and gets the next broker epoch.
func (e *Embedded) Register(ctx context.Context, b Broker) (Broker, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.brokerEpoch++
	if err := e.persistLocked(); err != nil {
		e.brokerEpoch--
		return Broker{}, err
	}
	b.Epoch = e.brokerEpoch
	e.self = b
	return b, nil
}

// Evicted implements Membership: nothing else can take the single broker's id.
func (e *Embedded) Evicted() <-chan struct{} { return e.evicted }

// Deregister implements Membership.
func (e *Embedded) Deregister(ctx context.Context) error { return nil }

// WatchBrokers implements Membership: the set never changes after index 1.
func (e *Embedded) WatchBrokers(ctx context.Context, afterIndex uint64) ([]Broker, uint64, error) {
	e.mu.Lock()
	self := e.self
	e.mu.Unlock()
	if afterIndex < 1 {
		return []Broker{self}, 1, nil
	}
	<-ctx.Done()
	return []Broker{self}, 1, ctx.Err()
}

// Campaign implements ControllerLock: the single broker wins at once, with
// an epoch one above the last run's.
func (e *Embedded) Campaign(ctx context.Context, brokerID int32) (*Leadership, error) {
	var epoch int64
	err := e.mutate(func(next *Snapshot) error {
		e.epoch++
		e.resigned = false
		epoch = e.epoch
		next.Controller = Controller{ID: brokerID, Epoch: epoch}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Leadership{Epoch: epoch, Lost: make(chan struct{})}, nil
}

// Resign implements ControllerLock.
func (e *Embedded) Resign(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resigned = true
	return nil
}

// Controller implements ControllerLock.
func (e *Embedded) Controller(ctx context.Context) (int32, int64, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.epoch == 0 || e.resigned {
		return -1, 0, false, nil
	}
	return e.self.ID, e.epoch, true, nil
}

// Close implements Backend.
func (e *Embedded) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.changed)
	}
	return nil
}
