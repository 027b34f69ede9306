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
	// Epoch is the broker epoch: a new, larger one with every start of the
	// broker's process (Kafka's broker epoch, KIP-380), set by Register.
	// A replica is in sync only under the epoch it was in sync under.
	Epoch int64
	// Dir is the id of the broker's data directory: a new one means a new
	// disk, without the logs of the old one.
	Dir string
	// Version is the Sluice version the broker's process runs.
	Version string
	// KafkaAddr is the host:port of its Kafka listener ("": none).
	KafkaAddr string
	// Rack names where the broker runs (a rack, a zone; "": not said):
	// replicas of a partition go to different racks where they can.
	Rack string
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
	Index uint64
	// ClusterID is the store's cluster id; "" when the store has none (it
	// is new, or it lost its data).
	ClusterID  string
	Topics     map[string]*messages.TopicRecord
	Partitions map[TopicPartition]Partition
	// Deleted holds the recorded topic deletions, by topic id.
	Deleted map[string]*messages.TopicDeletion
	// Controller is the current controller (ID -1: none) and the epoch of
	// the latest controller election.
	Controller Controller
	// Security is the cluster's ACLs and token users (nil: none stored yet)
	// and SecurityVersion the version to pass back to UpdateSecurity (0: none stored).
	Security        *messages.SecurityRecord
	SecurityVersion uint64
	// Regressed is set when the store was restored, wiped or replaced
	// before this snapshot (its own index went backwards, or its cluster id
	// key vanished or changed): a reason to check the cluster id before
	// acting on it.
	Regressed bool
}

// Controller names the controller broker and its epoch.
type Controller struct {
	ID    int32
	Epoch int64
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

// MetadataStore holds topics, partition states and the security record.
type MetadataStore interface {
	// Load returns the current snapshot.
	Load(ctx context.Context) (*Snapshot, error)
	// CreateClusterID gives a store without a cluster id a new one, and
	// returns the store's cluster id (the existing one, if it had one).
	// Only a broker whose data directory is new calls it: a store that
	// lost its id must not be taken for a new cluster by brokers with data.
	CreateClusterID(ctx context.Context) (string, error)
	// Watch blocks until the store's index is greater than afterIndex, then
	// returns the snapshot; it may also return early with the same index.
	Watch(ctx context.Context, afterIndex uint64) (*Snapshot, error)
	// CreateTopic stores a topic and the initial state of its partitions at
	// once. ErrTopicExists when the name is taken.
	CreateTopic(ctx context.Context, f Fence, t *messages.TopicRecord, parts []*messages.PartitionState) error
	// DeleteTopic removes a topic and its partition states and records the
	// deletion (Snapshot.Deleted) in the same write. ErrTopicNotFound.
	DeleteTopic(ctx context.Context, f Fence, name string) error
	// UpdateTopic replaces a topic's record with next if it still equals
	// prev, and stores the initial states of the partitions next adds.
	// ErrConflict when the record changed, ErrTopicNotFound when it is gone.
	UpdateTopic(ctx context.Context, f Fence, prev, next *messages.TopicRecord, added []*messages.PartitionState) error
	// UpdatePartitions writes every update or none: ErrConflict when any
	// partition's version moved, ErrFenced when f is no longer the controller.
	UpdatePartitions(ctx context.Context, f Fence, updates []PartitionUpdate) error
	// AllocateProducerIDs reserves count consecutive producer ids, never handed
	// out before and none below atLeast, and returns the first.
	AllocateProducerIDs(ctx context.Context, f Fence, count, atLeast int64) (int64, error)
	// UpdateSecurity replaces the security record if its version is still
	// expectVersion (0: only if none is stored yet): ErrConflict when it
	// moved, ErrFenced when f is no longer the controller.
	UpdateSecurity(ctx context.Context, f Fence, rec *messages.SecurityRecord, expectVersion uint64) error
}

// Membership tracks which brokers are alive.
type Membership interface {
	// Register claims b's broker id for this process, gives it a new broker
	// epoch and announces it, keeping it alive until Deregister or the
	// process dies. It returns b with its Epoch once registered, or
	// ErrBrokerIDInUse while another live process holds the id.
	Register(ctx context.Context, b Broker) (Broker, error)
	// Evicted is closed when another process took over this broker's id
	// (this one had been silent for longer than the store waits): this
	// process must stop acting as that broker.
	Evicted() <-chan struct{}
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
	// ErrClusterIDChanged: the store no longer holds the cluster id this
	// broker started with (it was wiped, restored or replaced); nothing is
	// written to it.
	ErrClusterIDChanged = errors.New("the metadata store does not hold this broker's cluster id")
	ErrClosed           = errors.New("cluster backend closed")
	ErrBrokerIDInUse    = errors.New("broker id in use by another live broker")
)
