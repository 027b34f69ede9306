package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/messages"
)

// counters are the metrics the actors add to as things happen.
type counters struct {
	recordsProduced *prometheus.CounterVec
	bytesProduced   *prometheus.CounterVec
	bytesFetched    *prometheus.CounterVec
	replicationIn   prometheus.Counter
	replicationOut  prometheus.Counter
	reassignmentOut prometheus.Counter
	elections       prometheus.Counter
	isrShrinks      prometheus.Counter
	isrExpands      prometheus.Counter
	requests        *prometheus.CounterVec
	requestErrors   *prometheus.CounterVec
	produceSeconds  *prometheus.HistogramVec
	fsyncSeconds    prometheus.Histogram
	commitBatches   prometheus.Histogram
	mailboxDepth    prometheus.Gauge
	mailboxSeconds  prometheus.Histogram
	kafkaRequests   *prometheus.CounterVec
	kafkaSeconds    *prometheus.HistogramVec
	duplicates      prometheus.Counter
	storeErrors     *prometheus.CounterVec
	throttleSeconds *prometheus.CounterVec
	loginFailures   *prometheus.CounterVec
}

// latencyBuckets reach from 100 µs to about 26 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 19)

func newCounters(r *prometheus.Registry) *counters {
	c := &counters{
		recordsProduced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_records_produced_total",
			Help: "Records appended to partitions this broker leads, by topic."}, []string{"topic"}),
		bytesProduced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_produced_bytes_total",
			Help: "Record batch bytes appended to partitions this broker leads, by topic."}, []string{"topic"}),
		bytesFetched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_fetched_bytes_total",
			Help: "Record batch bytes served to consumers, by topic."}, []string{"topic"}),
		replicationIn: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_replication_in_bytes_total",
			Help: "Record batch bytes this broker's followers appended from their leaders."}),
		replicationOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_replication_out_bytes_total",
			Help: "Record batch bytes this broker's leaders served to followers."}),
		reassignmentOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_reassignment_out_bytes_total",
			Help: "Record batch bytes this broker's leaders served to replicas that partition moves add (part of sluice_replication_out_bytes_total)."}),
		elections: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_leader_elections_total",
			Help: "Partition leaders this broker's controller elected or moved."}),
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_isr_shrinks_total",
			Help: "ISR shrinks of partitions this broker leads."}),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_isr_expands_total",
			Help: "ISR expansions of partitions this broker leads."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_requests_total",
			Help: "Requests received by the broker actor (Sluice's protocol and the Kafka listener's, which it forwards), by type."}, []string{"request"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_request_errors_total",
			Help: "Produce and fetch requests a partition answered with an error, by request and error code."}, []string{"request", "error"}),
		produceSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_produce_duration_seconds",
			Help:    "Time from a produce request's arrival at its partition to its acknowledgement, by acks (1 or all).",
			Buckets: latencyBuckets}, []string{"acks"}),
		fsyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_fsync_duration_seconds",
			Help: "Duration of the fsyncs that make produced records durable.", Buckets: latencyBuckets}),
		commitBatches: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_group_commit_requests",
			Help:    "Produce requests written by one append of a partition's group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
		mailboxDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_partition_mailbox_messages",
			Help: "Messages waiting in the mailboxes of this broker's partition actors."}),
		mailboxSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sluice_partition_mailbox_wait_seconds",
			Help: "Time a message waited in a partition actor's mailbox.", Buckets: latencyBuckets}),
		kafkaRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_kafka_requests_total",
			Help: "Requests served by the Kafka listener, by API and top-level error code (NONE when the answer has none or only per-partition ones)."},
			[]string{"api", "error"}),
		kafkaSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_kafka_request_duration_seconds",
			Help: "Time the Kafka listener took to answer a request, by API.", Buckets: latencyBuckets}, []string{"api"}),
	}
	c.duplicates = prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_idempotent_duplicates_total",
		Help: "Retried idempotent batches answered with their first write's offsets instead of being written again."})
	c.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_metadata_store_errors_total",
		Help: "Failed calls to the metadata store (Consul or embedded), by operation."}, []string{"operation"})
	for _, op := range []string{"metadata watch", "broker watch", "controller write"} {
		c.storeErrors.WithLabelValues(op) // exported at 0 from the start
	}
	c.throttleSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_kafka_throttle_seconds_total",
		Help: "Time Kafka clients over a client quota were throttled for, by quota (producer_byte_rate, consumer_byte_rate)."}, []string{"quota"})
	for _, q := range []string{"producer_byte_rate", "consumer_byte_rate"} {
		c.throttleSeconds.WithLabelValues(q)
	}
	c.loginFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_kafka_login_failures_total",
		Help: "SASL logins refused on the Kafka listener, by mechanism (each is logged with its source address and that address's refusals in the last minute)."},
		[]string{"mechanism"})
	r.MustRegister(c.duplicates, c.storeErrors, c.throttleSeconds, c.loginFailures)
	r.MustRegister(c.recordsProduced, c.bytesProduced, c.bytesFetched, c.replicationIn, c.replicationOut, c.reassignmentOut, c.elections,
		c.isrShrinks, c.isrExpands, c.requests, c.requestErrors, c.produceSeconds, c.fsyncSeconds, c.commitBatches,
		c.mailboxDepth, c.mailboxSeconds, c.kafkaRequests, c.kafkaSeconds)
	return c
}

// Topic is the counters of one topic, looked up once by each partition
// actor rather than on every request.
type Topic struct {
	records, produced, fetched prometheus.Counter
}

// Topic returns the counters of topic (nil, counting nothing, on a nil
// Broker).
func (m *Broker) Topic(topic string) *Topic {
	if m == nil {
		return nil
	}
	return &Topic{records: m.c.recordsProduced.WithLabelValues(topic), produced: m.c.bytesProduced.WithLabelValues(topic),
		fetched: m.c.bytesFetched.WithLabelValues(topic)}
}

// Produced counts records appended in batches of bytes.
func (t *Topic) Produced(records, bytes int) {
	if t != nil {
		t.records.Add(float64(records))
		t.produced.Add(float64(bytes))
	}
}

// Fetched counts batch bytes served to a consumer.
func (t *Topic) Fetched(bytes int) {
	if t != nil && bytes > 0 {
		t.fetched.Add(float64(bytes))
	}
}

// Request counts a request the broker actor received.
func (m *Broker) Request(name string) {
	if m != nil {
		m.c.requests.WithLabelValues(name).Inc()
	}
}

// RequestError counts a produce or fetch answered with code.
func (m *Broker) RequestError(request string, code messages.ErrorCode) {
	if m != nil && code != messages.ErrorCode_NONE {
		m.c.requestErrors.WithLabelValues(request, code.String()).Inc()
	}
}

// Acknowledged observes a produce request acknowledged after d.
func (m *Broker) Acknowledged(acksAll bool, d time.Duration) {
	if m == nil {
		return
	}
	acks := "1"
	if acksAll {
		acks = "all"
	}
	m.c.produceSeconds.WithLabelValues(acks).Observe(d.Seconds())
}

// Fsynced observes an fsync of a partition log.
func (m *Broker) Fsynced(d time.Duration) {
	if m != nil {
		m.c.fsyncSeconds.Observe(d.Seconds())
	}
}

// GroupCommit observes one append of n produce requests.
func (m *Broker) GroupCommit(n int) {
	if m != nil {
		m.c.commitBatches.Observe(float64(n))
	}
}

// ReplicatedIn counts bytes a follower appended; ReplicatedOut bytes a
// leader served to a follower.
func (m *Broker) ReplicatedIn(bytes int) {
	if m != nil && bytes > 0 {
		m.c.replicationIn.Add(float64(bytes))
	}
}

func (m *Broker) ReplicatedOut(bytes int) {
	if m != nil && bytes > 0 {
		m.c.replicationOut.Add(float64(bytes))
	}
}

// ReassignedOut counts bytes a leader served to a replica a move adds.
func (m *Broker) ReassignedOut(bytes int) {
	if m != nil && bytes > 0 {
		m.c.reassignmentOut.Add(float64(bytes))
	}
}

// Elected counts n leader elections by this broker's controller.
func (m *Broker) Elected(n int) {
	if m != nil && n > 0 {
		m.c.elections.Add(float64(n))
	}
}

// ISRChanged counts an ISR change of a partition led here.
func (m *Broker) ISRChanged(from, to int) {
	switch {
	case m == nil:
	case to < from:
		m.c.isrShrinks.Inc()
	case to > from:
		m.c.isrExpands.Inc()
	}
}

// KafkaRequest counts a Kafka listener request of api answered after d
// with a top-level error code.
func (m *Broker) KafkaRequest(api string, code int16, d time.Duration) {
	if m == nil {
		return
	}
	m.c.kafkaRequests.WithLabelValues(api, messages.ErrorCode(code).String()).Inc()
	m.c.kafkaSeconds.WithLabelValues(api).Observe(d.Seconds())
}

// KafkaThrottle counts a throttle of d given to a Kafka client over
// quota.
func (m *Broker) KafkaThrottle(quota string, d time.Duration) {
	if m != nil {
		m.c.throttleSeconds.WithLabelValues(quota).Add(d.Seconds())
	}
}

// KafkaLoginFailed counts a refused SASL login of mechanism.
func (m *Broker) KafkaLoginFailed(mechanism string) {
	if m != nil {
		m.c.loginFailures.WithLabelValues(mechanism).Inc()
	}
}

// Duplicate counts a retried idempotent batch answered without a write.
func (m *Broker) Duplicate() {
	if m != nil {
		m.c.duplicates.Inc()
	}
}

// MetadataStoreError counts a failed call to the metadata store.
func (m *Broker) MetadataStoreError(operation string) {
	if m != nil {
		m.c.storeErrors.WithLabelValues(operation).Inc()
	}
}
