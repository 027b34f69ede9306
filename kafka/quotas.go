package kafka

import (
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/internal/throttle"
)

// Client quotas (producer_byte_rate, consumer_byte_rate) on the Kafka
// listener, as Kafka enforces them: a request is served whole, then the
// bytes it produced or fetched are counted in its quota's bucket, and a
// client over its rate is told how long to wait (throttle_time_ms) and
// its connection is not read from for that long (KIP-219), so clients
// that ignore the throttle time are slowed all the same.

const (
	// maxQuotaBuckets bounds the buckets kept (one per user and client id
	// under a default quota): idle ones are dropped first.
	maxQuotaBuckets = 10_000
	// maxThrottle caps one throttle; a bigger debt stays in the bucket
	// and throttles the next request.
	maxThrottle = 30 * time.Second
)

type quotaBuckets struct {
	mu      sync.Mutex
	buckets map[acl.QuotaBucket]*throttle.Bucket
}

// bucket returns the bucket of k, making it (and dropping idle ones when
// there are too many) if needed.
func (q *quotaBuckets) bucket(k acl.QuotaBucket, now time.Time) *throttle.Bucket {
	q.mu.Lock()
	defer q.mu.Unlock()
	if b, ok := q.buckets[k]; ok {
		return b
	}
	if q.buckets == nil {
		q.buckets = map[acl.QuotaBucket]*throttle.Bucket{}
	}
	if len(q.buckets) >= maxQuotaBuckets {
		// Forget the buckets idle longer than any throttle (their clients
		// are gone), else one at random: every client keeps a bucket.
		for key, b := range q.buckets {
			if b.Idle(now) > maxThrottle {
				delete(q.buckets, key)
			}
		}
		for key := range q.buckets {
			if len(q.buckets) < maxQuotaBuckets {
				break
			}
			delete(q.buckets, key)
		}
	}
	b := &throttle.Bucket{}
	q.buckets[k] = b
	return b
}

// enforceQuota counts the bytes a produce sent or a fetch received in the
// connection's quota and, when it is over, sets the answer's throttle
// time and mutes the connection for as long.
func (c *conn) enforceQuota(h header, req kmsg.Request, resp kmsg.Response) {
	if c.srv.cfg.Quotas == nil {
		return
	}
	quotas := c.srv.cfg.Quotas()
	if quotas == nil {
		return
	}
	var key string
	var n int
	switch m := req.(type) {
	case *kmsg.ProduceRequest:
		key = acl.ProducerByteRate
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				n += len(p.Records)
			}
		}
	case *kmsg.FetchRequest:
		fetched, ok := resp.(*kmsg.FetchResponse)
		if !ok {
			return
		}
		key = acl.ConsumerByteRate
		for _, t := range fetched.Topics {
			for _, p := range t.Partitions {
				n += len(p.RecordBatches)
			}
		}
	default:
		return
	}
	clientID := ""
	if h.clientID != nil {
		clientID = *h.clientID
	}
	rate, bucket, ok := quotas.Resolve(key, strings.TrimPrefix(c.caller.Principal, "User:"), clientID)
	if !ok || n == 0 {
		return
	}
	now := time.Now()
	wait := min(c.srv.quotaBuckets.bucket(bucket, now).Take(n, int64(rate), now), maxThrottle)
	if wait <= 0 {
		return
	}
	c.mutedUntil.Store(now.Add(wait).UnixNano())
	if t, ok := resp.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(int32(wait.Milliseconds()))
	}
	c.srv.cfg.Metrics.KafkaThrottle(key, wait)
}

// waitMuted waits out the connection's throttle before its next request
// is read (false: the listener stopped meanwhile).
func (c *conn) waitMuted() bool {
	wait := time.Until(time.Unix(0, c.mutedUntil.Load()))
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.srv.stopped.Done():
		return false
	}
}
