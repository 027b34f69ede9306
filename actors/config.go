package actors

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/internal/throttle"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
	"github.com/sluicemq/sluice/metrics"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/datadir"
)

// BrokerConfig configures one broker.
type BrokerConfig struct {
	// ID of this broker, unique in the cluster.
	ID int32
	// DataDir holds partition logs and, in embedded mode, the metadata.
	DataDir string
	// Version is the Sluice version this process runs, shown to clients.
	Version string
	// MetadataStore says where the metadata lives, shown to clients.
	MetadataStore string
	// Metrics receives the broker's counters and published state (nil:
	// none are kept).
	Metrics *metrics.Broker
	// KafkaAddr is the advertised host:port of the broker's Kafka
	// listener ("": none), announced to the cluster with the broker.
	KafkaAddr string
	// Rack names where the broker runs ("": not said; Kafka's
	// broker.rack): a new partition's replicas go to different racks when
	// every live broker names one.
	Rack string
	// DefaultTopic is the configuration of topics that set nothing else.
	DefaultTopic TopicConfig
	// DefaultPartitions and DefaultReplicationFactor apply to topics created
	// without them (and to auto-created topics).
	DefaultPartitions        int
	DefaultReplicationFactor int
	// AutoCreateTopics creates a topic on its first metadata request.
	AutoCreateTopics bool
	// ReplicaLagTimeMax: a follower that has not caught up for longer leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// BrokerSessionTimeout: a live broker that has not answered the
	// controller's broker's pings for this long is fenced (out of
	// leadership and the ISRs), and a controller whose broker reaches
	// fewer than half of the live brokers for this long gives up its lock
	// (Kafka's broker.session.timeout.ms).
	BrokerSessionTimeout time.Duration
	// AutoLeaderRebalance: every LeaderImbalanceCheckInterval the
	// controller gives leadership back to the preferred replicas (the
	// first assigned) of every broker that leads fewer of the partitions
	// it is preferred for than LeaderImbalanceRatio allows (Kafka's
	// auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds
	// and leader.imbalance.per.broker.percentage).
	AutoLeaderRebalance          bool
	LeaderImbalanceCheckInterval time.Duration
	LeaderImbalanceRatio         float64
	// RetentionCheckInterval is how often partitions apply retention.
	RetentionCheckInterval time.Duration
	// HWCheckpointInterval is how often a partition persists its HW.
	HWCheckpointInterval time.Duration
	// MaxFetchBytes caps one fetch response.
	MaxFetchBytes int
	// MaxFetchWaitMs caps how long a fetch may be parked.
	MaxFetchWaitMs int32
	// OffsetsPartitions and OffsetsReplicationFactor shape the
	// __consumer_offsets topic, created on a group's first request (the
	// replication factor is capped by the live brokers).
	OffsetsPartitions        int
	OffsetsReplicationFactor int
	// OffsetsRetention is how long __consumer_offsets keeps a record
	// (Kafka's offsets.retention.minutes), whatever the topics' defaults:
	// each group's current state is written again every third of it, so
	// retention never takes the latest of a group's offsets or membership.
	OffsetsRetention time.Duration
	// GroupInitialRebalanceDelay is how long an empty group waits for more
	// members before its first generation.
	GroupInitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound members'
	// session timeouts.
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// GroupMaxSize bounds a group's members (Kafka's group.max.size).
	GroupMaxSize int
	// GroupConsumerSessionTimeout and GroupConsumerHeartbeatInterval are
	// the session timeout and heartbeat interval of members of Kafka's
	// consumer protocol (KIP-848), which the coordinator sets, not they.
	GroupConsumerSessionTimeout    time.Duration
	GroupConsumerHeartbeatInterval time.Duration
	// GroupMetadataMaxBytes bounds what the members of all groups this
	// broker coordinates carry (topics, protocols and their metadata); one
	// principal may hold a quarter. GroupMetadata counts it (Start makes
	// it from GroupMetadataMaxBytes when nil).
	GroupMetadataMaxBytes int64
	GroupMetadata         *budget.Budget
	// ProducerIDExpiration: a partition forgets an idempotent producer id
	// that has appended nothing for this long (Kafka's
	// producer.id.expiration.ms); a retry arriving later is not recognised
	// as a duplicate.
	ProducerIDExpiration time.Duration
	// UnsafeNoSync skips the fsync of partition logs: an acknowledged
	// record is lost in a power failure. For tests and benchmarks only.
	UnsafeNoSync bool
	// LogMemoryBytes is the budget of memory the open partition logs may
	// hold (storage.Pool); LogIdleTime closes a log unused that long.
	LogMemoryBytes int64
	LogIdleTime    time.Duration
	// MaxOpenLogs is the most partition logs open at once (each holds a
	// file descriptor; 0: no limit).
	MaxOpenLogs int
	// MaxPartitions is the most partition replicas this broker hosts;
	// creating more is refused (0: no limit).
	MaxPartitions int
	// LogPool, Syncer and Closings are shared by the broker's partition
	// logs: the memory budget, the fsync waves of the data directory, and
	// the logs being closed beside their stopped actors. StartBroker
	// creates them when nil.
	LogPool  *storage.Pool
	Syncer   *storage.Syncer
	Closings *storage.Closings
	// CatchUp limits, across the broker's leaders, the bytes sent to
	// replicas that a reassignment adds, at the rate the move asked for
	// (nil: StartBroker creates it).
	CatchUp *throttle.Bucket
	// OpenLog opens a partition's log; nil opens a WAL log. Tests use it to
	// inject faults.
	OpenLog func(dir string, topic TopicConfig) (storage.Log, error)
	Logger  *slog.Logger
	// Secure is set when the broker runs with TLS: every connection has an
	// authenticated principal, brokers are known by their Broker:<id>
	// principals, and every client request is checked against the
	// cluster's ACLs (SuperUsers and brokers bypass them).
	Secure     bool
	SuperUsers []string
	// Tokens, when set, is kept up to date with the token users of the
	// metadata, for the transport to authenticate tokens with.
	Tokens *TokenTable
	// ACLs, when set, holds the broker's current ACL authorizer (nil until
	// the metadata is loaded), for readers in this process that answer
	// other listeners' visitors: the HTTP listener and the web console.
	ACLs *atomic.Pointer[acl.Authorizer]
	// Quotas, when set, holds the cluster's client quotas (nil: none),
	// for the Kafka listener to enforce.
	Quotas *atomic.Pointer[acl.Quotas]
	// DynamicConfigs, when set, holds the dynamic broker settings in force
	// for this broker (messages/brokerconfig), for the listeners.
	DynamicConfigs *atomic.Pointer[brokerconfig.Values]
	// ProducerIDs issues and checks producer ids bound to principals (on
	// a Secure broker), with the key of the metadata's security record;
	// Start makes one when nil.
	ProducerIDs *acl.ProducerIDs

	// Dir is DataDir, opened (locked) by the caller; nil: StartBroker opens it.
	Dir *datadir.Dir
	// ClusterID, BrokerEpoch and DirectoryID are set by StartBroker: the
	// cluster the data directory belongs to, this start's broker epoch, and
	// the data directory's id.
	ClusterID   string
	BrokerEpoch int64
	DirectoryID string
	// ProducerIDsEnd is the end of the last producer-id block the broker
	// was given, as its data directory records it (set by StartBroker).
	ProducerIDsEnd int64
}

// DefaultLogMemoryBytes is the default budget of the partition logs' memory.
const DefaultLogMemoryBytes = 512 << 20

// DefaultBrokerConfig returns a configuration with Kafka-like defaults.
func DefaultBrokerConfig() BrokerConfig {
	return BrokerConfig{
		DataDir:                        "sluice-data",
		DefaultTopic:                   DefaultTopicConfig(),
		DefaultPartitions:              1,
		DefaultReplicationFactor:       1,
		ReplicaLagTimeMax:              30 * time.Second,
		BrokerSessionTimeout:           9 * time.Second,
		AutoLeaderRebalance:            true,
		LeaderImbalanceCheckInterval:   300 * time.Second,
		LeaderImbalanceRatio:           0.10,
		RetentionCheckInterval:         5 * time.Minute,
		HWCheckpointInterval:           5 * time.Second,
		MaxFetchBytes:                  8 << 20,
		MaxFetchWaitMs:                 30000,
		OffsetsPartitions:              16,
		OffsetsRetention:               7 * 24 * time.Hour,
		OffsetsReplicationFactor:       3,
		GroupInitialRebalanceDelay:     300 * time.Millisecond,
		GroupMinSessionTimeout:         time.Second,
		GroupMaxSessionTimeout:         5 * time.Minute,
		GroupMaxSize:                   1000,
		GroupConsumerSessionTimeout:    45 * time.Second,
		GroupConsumerHeartbeatInterval: 5 * time.Second,
		GroupMetadataMaxBytes:          256 << 20,
		ProducerIDExpiration:           producerstate.DefaultProducerIDExpiration,
		LogMemoryBytes:                 DefaultLogMemoryBytes,
		LogIdleTime:                    storage.DefaultIdleAfter,
		Logger:                         slog.Default(),
	}
}

// Validate reports the first setting out of range, naming it.
func (c *BrokerConfig) Validate() error {
	switch {
	case c.ID < 0:
		return fmt.Errorf("broker id %d: must be >= 0", c.ID)
	case c.DataDir == "":
		return fmt.Errorf("data dir: must be set")
	case c.DefaultPartitions < 1:
		return fmt.Errorf("default partitions %d: must be >= 1", c.DefaultPartitions)
	case c.DefaultReplicationFactor < 1:
		return fmt.Errorf("default replication factor %d: must be >= 1", c.DefaultReplicationFactor)
	case c.ReplicaLagTimeMax <= 0:
		return fmt.Errorf("replica lag time max %v: must be > 0", c.ReplicaLagTimeMax)
	case c.BrokerSessionTimeout <= 0:
		return fmt.Errorf("broker session timeout %v: must be > 0", c.BrokerSessionTimeout)
	case c.LeaderImbalanceCheckInterval <= 0:
		return fmt.Errorf("leader imbalance check interval %v: must be > 0", c.LeaderImbalanceCheckInterval)
	case c.LeaderImbalanceRatio < 0 || c.LeaderImbalanceRatio > 1:
		return fmt.Errorf("leader imbalance ratio %v: want 0 to 1", c.LeaderImbalanceRatio)
	case c.OffsetsRetention < time.Second:
		return fmt.Errorf("offsets retention %v: must be at least 1s", c.OffsetsRetention)
	case c.RetentionCheckInterval <= 0:
		return fmt.Errorf("retention check interval %v: must be > 0", c.RetentionCheckInterval)
	case c.HWCheckpointInterval <= 0:
		return fmt.Errorf("hw checkpoint interval %v: must be > 0", c.HWCheckpointInterval)
	case c.MaxFetchBytes < c.DefaultTopic.MaxMessageBytes:
		return fmt.Errorf("max fetch bytes %d: must be >= max message bytes %d", c.MaxFetchBytes, c.DefaultTopic.MaxMessageBytes)
	case c.MaxFetchWaitMs < 0:
		return fmt.Errorf("max fetch wait %d ms: must be >= 0", c.MaxFetchWaitMs)
	case c.OffsetsPartitions < 1 || c.OffsetsPartitions > 1000:
		return fmt.Errorf("offsets partitions %d: want 1 to 1000", c.OffsetsPartitions)
	case c.OffsetsReplicationFactor < 1:
		return fmt.Errorf("offsets replication factor %d: must be >= 1", c.OffsetsReplicationFactor)
	case c.GroupMaxSize <= 0:
		return fmt.Errorf("group max size %d: must be > 0", c.GroupMaxSize)
	case c.GroupMetadataMaxBytes < 4<<20:
		return fmt.Errorf("group metadata max bytes %d: must be at least 4 MiB (4194304)", c.GroupMetadataMaxBytes)
	case c.GroupMinSessionTimeout <= 0 || c.GroupMaxSessionTimeout < c.GroupMinSessionTimeout:
		return fmt.Errorf("group session timeout bounds [%v, %v]: want 0 < min <= max", c.GroupMinSessionTimeout, c.GroupMaxSessionTimeout)
	case c.GroupConsumerHeartbeatInterval <= 0 || c.GroupConsumerSessionTimeout <= c.GroupConsumerHeartbeatInterval:
		return fmt.Errorf("consumer group heartbeat interval %v and session timeout %v: want 0 < interval < session timeout",
			c.GroupConsumerHeartbeatInterval, c.GroupConsumerSessionTimeout)
	case c.GroupInitialRebalanceDelay < 0:
		return fmt.Errorf("group initial rebalance delay %v: must be >= 0", c.GroupInitialRebalanceDelay)
	case c.ProducerIDExpiration <= 0:
		return fmt.Errorf("producer id expiration %v: must be > 0", c.ProducerIDExpiration)
	case c.LogMemoryBytes < 16<<20:
		return fmt.Errorf("log memory bytes %d: must be at least 16 MiB", c.LogMemoryBytes)
	case len(c.Rack) > 255 || strings.ContainsFunc(c.Rack, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("rack %q: want at most 255 printable characters", c.Rack)
	case c.MaxPartitions < 0:
		return fmt.Errorf("max partitions %d: must be >= 0", c.MaxPartitions)
	case c.Logger == nil:
		return fmt.Errorf("logger: must be set")
	}
	return nil
}

// BrokerConfigChange is the change an AlterBrokerConfigsRequest asks for.
func BrokerConfigChange(m *messages.AlterBrokerConfigsRequest) brokerconfig.Change {
	ch := brokerconfig.Change{BrokerID: m.BrokerId, Set: map[string]string{}, Delete: m.Delete, Replace: m.Replace}
	for _, v := range m.Set {
		ch.Set[v.Name] = v.Value
	}
	return ch
}

// ApplyBrokerConfigs returns rec with the change m asks for, refusing it
// (brokerconfig.ErrInvalid) when a value is out of its range, the
// defaults of topic configs in their topic configs' ranges.
func ApplyBrokerConfigs(rec *messages.SecurityRecord, m *messages.AlterBrokerConfigsRequest) (*messages.SecurityRecord, error) {
	ch := BrokerConfigChange(m)
	for _, name := range slices.Sorted(maps.Keys(ch.Set)) {
		if key, ok := brokerconfig.TopicSynonyms[name]; ok {
			if _, err := ParseTopicConfig(DefaultTopicConfig(), map[string]string{key: ch.Set[name]}); err != nil {
				return nil, fmt.Errorf("%w: %s (the default of %s): %w", brokerconfig.ErrInvalid, name, key, err)
			}
		}
	}
	return brokerconfig.Apply(rec, ch)
}

// TopicDefaults is the configuration of topics that set nothing else: the
// dynamic defaults in v over static (the broker's flags).
func TopicDefaults(static TopicConfig, v brokerconfig.Values) TopicConfig {
	c := static
	defaults := v.TopicDefaults()
	for _, key := range slices.Sorted(maps.Keys(defaults)) {
		// Each on its own: a value stored before a range narrowed is
		// skipped, not the others with it.
		if next, err := ParseTopicConfig(c, map[string]string{key: defaults[key]}); err == nil {
			c = next
		}
	}
	return c
}
