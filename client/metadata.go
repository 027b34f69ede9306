package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
)

// partitionMeta is what the client knows of one partition's leadership.
type partitionMeta struct {
	leader int32
	epoch  int32
}

type topicMeta struct {
	partitions []partitionMeta
	// maxMessageBytes is the topic's own max.message.bytes (0: the
	// broker's default, not known here).
	maxMessageBytes int
	err             error
	fetched         time.Time
	// refreshing: a background refresh of this topic is under way.
	refreshing bool
}

// metadata caches brokers and topic leadership, refreshing on demand from
// any broker it knows (the seed first).
type metadata struct {
	system  *actor.ActorSystem
	seeds   []string
	timeout time.Duration
	maxAge  time.Duration

	mu          sync.Mutex
	brokers     map[int32]string
	topics      map[string]*topicMeta
	lastRefresh time.Time
}

// newMetadata starts from seeds: one broker address or several separated
// by commas, as Kafka's bootstrap.servers.
func newMetadata(system *actor.ActorSystem, seeds string, timeout, maxAge time.Duration) *metadata {
	m := &metadata{system: system, timeout: timeout, maxAge: maxAge, brokers: map[int32]string{}, topics: map[string]*topicMeta{}}
	for _, s := range strings.Split(seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m.seeds = append(m.seeds, s)
		}
	}
	return m
}

// addrs returns the broker addresses to try: the seeds in the order
// given, then the other known brokers by id, each once; those that failed
// in the last minute go last. The seeds come first because they are the
// brokers the user named (for a client inside a broker, that broker
// itself), so a request that may go anywhere does not wait on a broker
// that has just stopped.
func (m *metadata) addrs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.brokers)+len(m.seeds))
	for _, s := range m.seeds {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	ids := make([]int32, 0, len(m.brokers))
	for id := range m.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if a := m.brokers[id]; !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		fa, fb := recentlyFailed(a), recentlyFailed(b)
		switch {
		case fa == fb:
			return 0
		case fa:
			return 1
		default:
			return -1
		}
	})
	return out
}

// fetch asks the brokers for metadata of topics (all when empty) and
// updates the cache.
func (m *metadata) fetch(topics []string, autoCreate bool) (*messages.MetadataResponse, error) {
	var lastErr error = ErrNoBrokers
	for _, addr := range m.addrs() {
		res, err := request(m.system, addr, &messages.MetadataRequest{Topics: topics, AllowAutoTopicCreation: autoCreate}, min(m.timeout, 10*time.Second))
		if err != nil {
			lastErr = telling(lastErr, err)
			continue
		}
		resp, ok := res.(*messages.MetadataResponse)
		if !ok {
			lastErr = fmt.Errorf("unexpected metadata answer %T", res)
			continue
		}
		m.update(resp, len(topics) == 0)
		return resp, nil
	}
	return nil, lastErr
}

func (m *metadata) update(resp *messages.MetadataResponse, all bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastRefresh = time.Now()
	if len(resp.Brokers) > 0 {
		m.brokers = make(map[int32]string, len(resp.Brokers))
		for _, b := range resp.Brokers {
			m.brokers[b.Id] = b.Address
		}
	}
	if all {
		m.topics = map[string]*topicMeta{}
	}
	for _, t := range resp.Topics {
		tm := &topicMeta{fetched: m.lastRefresh}
		if v, err := strconv.Atoi(t.Configs["max.message.bytes"]); err == nil {
			tm.maxMessageBytes = v
		}
		if t.Error != messages.ErrorCode_NONE && len(t.Partitions) == 0 {
			tm.err = &messages.Error{Code: t.Error, Message: t.ErrorMessage}
		}
		tm.partitions = make([]partitionMeta, len(t.Partitions))
		for _, p := range t.Partitions {
			if int(p.Partition) < len(tm.partitions) {
				tm.partitions[p.Partition] = partitionMeta{leader: p.Leader, epoch: p.LeaderEpoch}
			}
		}
		m.topics[t.Name] = tm
	}
}

// partitionCount returns how many partitions topic has, fetching metadata
// (and retrying retriable errors) until ctx ends.
// cachedPartitionCount is partitionCount when the topic's metadata is
// already known, without waiting or asking a broker.
// A view older than maxAge is refreshed in the background.
func (m *metadata) cachedPartitionCount(topic string) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tm := m.topics[topic]
	if tm == nil || tm.err != nil || len(tm.partitions) == 0 {
		return 0, false
	}
	if m.maxAge > 0 && !tm.refreshing && time.Since(tm.fetched) > m.maxAge {
		tm.refreshing = true
		go func() {
			if _, err := m.fetch([]string{topic}, false); err != nil {
				m.mu.Lock()
				tm.refreshing = false // the next use tries again
				m.mu.Unlock()
			}
		}()
	}
	return len(tm.partitions), true
}

func (m *metadata) partitionCount(ctx context.Context, topic string, autoCreate bool) (int, error) {
	if n, ok := m.cachedPartitionCount(topic); ok {
		return n, nil
	}
	backoff := 50 * time.Millisecond
	unknown := 0 // answers in a row that the topic does not exist
	down := 0    // rounds in a row in which no address accepted a connection
	for {
		_, err := m.fetch([]string{topic}, autoCreate)
		if err == nil {
			m.mu.Lock()
			tm := m.topics[topic]
			m.mu.Unlock()
			if tm == nil {
				err = &messages.Error{Code: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, Message: topic}
			} else if tm.err != nil {
				err = tm.err
			} else if len(tm.partitions) == 0 {
				err = &messages.Error{Code: messages.ErrorCode_LEADER_NOT_AVAILABLE, Message: topic}
			} else {
				return len(tm.partitions), nil
			}
			if errors.Is(err, messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION) {
				// One more answer first: a topic just created may not have
				// reached the broker that answered.
				if unknown++; unknown >= 2 {
					return 0, &messages.Error{Code: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION,
						Message: fmt.Sprintf("topic %q does not exist", topic)}
				}
			} else {
				unknown = 0
			}
		}
		if isNotListening(err) {
			down++
		} else {
			down = 0
		}
		if !retriable(err) || down >= 2 {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("topic %q: %w (gave up: %v)", topic, err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// maxMessageBytes is topic's own max.message.bytes, 0 when it has none or
// is not known.
func (m *metadata) maxMessageBytes(topic string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tm := m.topics[topic]; tm != nil {
		return tm.maxMessageBytes
	}
	return 0
}

// leader returns the address and epoch of a partition's leader from the cache.
func (m *metadata) leader(topic string, partition int32) (string, int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tm := m.topics[topic]
	if tm == nil {
		return "", 0, &messages.Error{Code: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, Message: topic}
	}
	if tm.err != nil {
		return "", 0, tm.err
	}
	if partition < 0 || int(partition) >= len(tm.partitions) {
		return "", 0, &messages.Error{Code: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION,
			Message: fmt.Sprintf("%s has %d partitions, not %d", topic, len(tm.partitions), partition+1)}
	}
	pm := tm.partitions[partition]
	addr, ok := m.brokers[pm.leader]
	if pm.leader < 0 || !ok {
		return "", 0, &messages.Error{Code: messages.ErrorCode_LEADER_NOT_AVAILABLE, Message: fmt.Sprintf("%s-%d has no live leader", topic, partition)}
	}
	return addr, pm.epoch, nil
}

// refreshSoon refreshes topics unless that happened in the last 50 ms,
// and returns the error of a refresh that reached no broker.
func (m *metadata) refreshSoon(topics ...string) error {
	m.mu.Lock()
	recent := time.Since(m.lastRefresh) < 50*time.Millisecond
	m.mu.Unlock()
	if recent {
		return nil
	}
	_, err := m.fetch(topics, false)
	return err
}
