package kafka

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Incremental fetch sessions (KIP-227), Fetch v7+. A full fetch with
// session epoch 0 opens a session holding its partitions and their fetch
// offsets; later fetches of the session (epoch 1, 2, ...) name only the
// partitions whose fetch offset or limit changed, and those to forget,
// and are answered with only the partitions that have records, an error,
// or a high watermark or log start offset other than last answered. A
// consumer of many partitions so sends and receives a few bytes per idle
// fetch instead of every partition each time. Epoch -1 closes the session
// (and fetches without one). Each listener keeps at most
// DefaultFetchSessions sessions; a new one evicts the one used least
// recently, whose client then hears FETCH_SESSION_ID_NOT_FOUND and opens
// another, as with Kafka's max.incremental.fetch.session.cache.slots.

// DefaultFetchSessions is Kafka's default cache size.
const DefaultFetchSessions = 1000

// maxSessionParts bounds the partitions all sessions of a listener hold
// (about 100 bytes each): a hostile client adding partitions to sessions
// evicts the sessions used least recently instead of growing the cache.
// One session holds at most the entries of one request
// (Config.MaxRequestEntries); more closes it.
const maxSessionParts = 200_000

const (
	errInvalidFetchSessionEpoch int16 = 71
	errFetchSessionCacheFull    int16 = 72
)

type sessionKey struct {
	topic     string
	partition int32
}

// sessionPart is a partition of a session: what the client last asked
// for, and what it was last told.
type sessionPart struct {
	key                 sessionKey
	offset              int64
	maxBytes            int32
	epoch               int32
	hw, logStart        int64
	answeredOnce, fresh bool // fresh: added by the request being served
}

type fetchSession struct {
	mu       sync.Mutex
	id       int32
	epoch    int32 // the epoch the next fetch must carry
	parts    []*sessionPart
	lastUsed time.Time
	// size is len(parts) as the cache counts it (under the cache's mu).
	size int
}

// fetchSessions is a listener's session cache.
type fetchSessions struct {
	mu       sync.Mutex
	max      int
	maxParts int // 0: maxSessionParts
	byID     map[int32]*fetchSession
	// parts counts the partitions the sessions hold (their size as last
	// reported by resized).
	parts int
}

// resized records that s now holds n partitions and evicts the sessions
// used least recently while the cache holds more than its bound; it
// reports whether s is still cached.
func (c *fetchSessions) resized(s *fetchSession, n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID[s.id] != s {
		return false
	}
	c.parts += n - s.size
	s.size = n
	limit := c.maxParts
	if limit <= 0 {
		limit = maxSessionParts
	}
	for c.parts > limit {
		var oldest *fetchSession
		for _, o := range c.byID {
			if o != s && (oldest == nil || o.lastUsed.Before(oldest.lastUsed)) {
				oldest = o
			}
		}
		if oldest == nil {
			break
		}
		c.evictLocked(oldest)
	}
	return true
}

// evictLocked drops s from the cache (c.mu held).
func (c *fetchSessions) evictLocked(s *fetchSession) {
	delete(c.byID, s.id)
	c.parts -= s.size
}

func (c *fetchSessions) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.byID[id]
	if s != nil {
		s.lastUsed = time.Now()
	}
	return s
}

func (c *fetchSessions) remove(id int32) {
	c.mu.Lock()
	if s := c.byID[id]; s != nil {
		c.evictLocked(s)
	}
	c.mu.Unlock()
}

// open makes a session, evicting the least recently used one when the
// cache is full; nil when it holds no sessions at all (max 0).
func (c *fetchSessions) open() *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 {
		return nil
	}
	if c.byID == nil {
		c.byID = map[int32]*fetchSession{}
	}
	if len(c.byID) >= c.max {
		var oldest *fetchSession
		for _, s := range c.byID {
			if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
				oldest = s
			}
		}
		c.evictLocked(oldest)
	}
	s := &fetchSession{epoch: 1, lastUsed: time.Now()}
	for s.id == 0 || c.byID[s.id] != nil {
		s.id = rand.Int32()
	}
	c.byID[s.id] = s
	return s
}

// update applies a request's partitions (added or changed) and forgotten
// ones to s; the partitions it names are answered whatever they hold.
func (s *fetchSession) update(req *kmsg.FetchRequest, version int16) {
	at := map[sessionKey]*sessionPart{}
	for _, p := range s.parts {
		p.fresh = false
		at[p.key] = p
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			k := sessionKey{t.Topic, p}
			if at[k] != nil {
				delete(at, k)
				s.parts = deletePart(s.parts, k)
			}
		}
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := sessionKey{t.Topic, p.Partition}
			sp := at[k]
			if sp == nil {
				sp = &sessionPart{key: k}
				at[k] = sp
				s.parts = append(s.parts, sp)
			}
			sp.offset, sp.maxBytes, sp.epoch, sp.fresh = p.FetchOffset, p.PartitionMaxBytes, -1, true
			if version >= 9 {
				sp.epoch = p.CurrentLeaderEpoch
			}
		}
	}
}

func deletePart(parts []*sessionPart, k sessionKey) []*sessionPart {
	for i, p := range parts {
		if p.key == k {
			return append(parts[:i], parts[i+1:]...)
		}
	}
	return parts
}

// asRequest is a full fetch request of every partition of s, for the
// fetch machinery.
func (s *fetchSession) asRequest(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	full := *req
	full.Topics = nil
	at := map[string]int{}
	for _, p := range s.parts {
		i, ok := at[p.key.topic]
		if !ok {
			i = len(full.Topics)
			at[p.key.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = p.key.topic
			full.Topics = append(full.Topics, t)
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p.key.partition, p.offset, p.maxBytes, p.epoch
		full.Topics[i].Partitions = append(full.Topics[i].Partitions, fp)
	}
	return &full
}

// trim keeps in resp, for an incremental fetch, only the partitions with
// records, an error, news (high watermark, log start) or just added, and
// records what each was told.
func (s *fetchSession) trim(resp *kmsg.FetchResponse, incremental bool) {
	at := map[sessionKey]*sessionPart{}
	for _, p := range s.parts {
		at[p.key] = p
	}
	topics := resp.Topics[:0]
	for _, t := range resp.Topics {
		parts := t.Partitions[:0]
		for _, rp := range t.Partitions {
			sp := at[sessionKey{t.Topic, rp.Partition}]
			keep := !incremental || sp == nil || sp.fresh || !sp.answeredOnce || len(rp.RecordBatches) > 0 ||
				rp.ErrorCode != 0 || rp.HighWatermark != sp.hw || rp.LogStartOffset != sp.logStart
			if sp != nil {
				sp.hw, sp.logStart, sp.answeredOnce = rp.HighWatermark, rp.LogStartOffset, true
			}
			if keep {
				parts = append(parts, rp)
			}
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	resp.Topics = topics
}
