package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/messages"
)

// Broker is one broker's identity and the address of its actor system.
type Broker struct {
	ID   int32
	Addr string
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Partition is a partition's stored state and the version to pass back for
// a check-and-set update.
type Partition struct {
	State   *messages.PartitionState
	Version uint64
}

// Snapshot is the whole metadata at one index. Treat it as read-only: the
// store may hand the same snapshot to several readers.
type Snapshot struct {
	// Index grows with every change; Watch(afterIndex) waits for a larger one.
	Index      uint64
	ClusterID  string
	Topics     map[string]*messages.TopicRecord
	Partitions map[TopicPartition]Partition
}

// PartitionsOf returns the states of a topic's partitions in partition order.
func (s *Snapshot) PartitionsOf(topic string) []Partition {
	t, ok := s.Topics[topic]
	if !ok {
		return nil
	}
	out := make([]Partition, 0, t.Partitions)
	for p := int32(0); p < t.Partitions; p++ {
		if st, ok := s.Partitions[TopicPartition{topic, p}]; ok {
			out = append(out, st)
		}
	}
	return out
}

// Fence proves a write comes from the current controller. The zero Fence is
// accepted by the embedded store only.
type Fence struct {
	// Session is the lock holder's session (Consul session id).
	Session string
	// Epoch is the controller epoch of the writer.
	Epoch int64
}

// PartitionUpdate replaces a partition's state if its version is still ExpectVersion.
type PartitionUpdate struct {
	State         *messages.PartitionState
	ExpectVersion uint64
}

// MetadataStore holds topics and partition states.
type MetadataStore interface {
	// Load returns the current snapshot.
	Load(ctx context.Context) (*Snapshot, error)
	// Watch blocks until the store's index is greater than afterIndex, then
	// returns the snapshot; it may also return early with the same index.
	Watch(ctx context.Context, afterIndex uint64) (*Snapshot, error)
	// CreateTopic stores a topic and the initial state of its partitions at
	// once. ErrTopicExists when the name is taken.
	CreateTopic(ctx context.Context, f Fence, t *messages.TopicRecord, parts []*messages.PartitionState) error
	// DeleteTopic removes a topic and its partition states. ErrTopicNotFound.
	DeleteTopic(ctx context.Context, f Fence, name string) error
	// UpdatePartitions writes every update or none: ErrConflict when any
	// partition's version moved, ErrFenced when f is no longer the controller.
	UpdatePartitions(ctx context.Context, f Fence, updates []PartitionUpdate) error
	// AllocateProducerIDs reserves count consecutive producer ids, never handed
	// out before, and returns the first.
	AllocateProducerIDs(ctx context.Context, f Fence, count int64) (int64, error)
}

// Membership tracks which brokers are alive.
type Membership interface {
	// Register announces b and keeps it alive until Deregister or the process
	// dies. It returns once b is registered.
	Register(ctx context.Context, b Broker) error
	// Deregister removes this broker at once (clean shutdown).
	Deregister(ctx context.Context) error
	// WatchBrokers blocks until the live set's index is greater than
	// afterIndex and returns the set (sorted by id) with its index.
	WatchBrokers(ctx context.Context, afterIndex uint64) ([]Broker, uint64, error)
}

// Leadership is held by the controller.
type Leadership struct {
	// Epoch of this controller: larger than every earlier controller's.
	Epoch int64
	// Fence to pass to every metadata write.
	Fence Fence
	// Lost is closed when the lock is lost.
	Lost <-chan struct{}
}

// ControllerLock elects the controller.
type ControllerLock interface {
	// Campaign blocks until brokerID holds the lock (or ctx ends).
	Campaign(ctx context.Context, brokerID int32) (*Leadership, error)
	// Resign releases the lock if held.
	Resign(ctx context.Context) error
	// Controller returns the current controller's id and epoch; ok is false
	// when there is none.
	Controller(ctx context.Context) (id int32, epoch int64, ok bool, err error)
}

// Backend bundles the three seams one implementation provides.
type Backend interface {
	MetadataStore
	Membership
	ControllerLock
	Close() error
}

// Errors of metadata operations.
var (
	ErrTopicExists   = errors.New("topic already exists")
	ErrTopicNotFound = errors.New("topic not found")
	ErrConflict      = errors.New("metadata changed concurrently")
	ErrFenced        = errors.New("not the controller any more")
	ErrClosed        = errors.New("cluster backend closed")
)
