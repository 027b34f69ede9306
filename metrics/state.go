package metrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/messages"
)

// The gauges computed from the published State at scrape time.
var (
	descBrokers          = prometheus.NewDesc("sluice_brokers", "Brokers registered and alive, as this broker sees them.", nil, nil)
	descTopics           = prometheus.NewDesc("sluice_topics", "Topics in the cluster metadata.", nil, nil)
	descPartitions       = prometheus.NewDesc("sluice_partitions", "Partitions in the cluster metadata.", nil, nil)
	descControllerActive = prometheus.NewDesc("sluice_controller_active", "1 on the broker that is the active controller, else 0.", nil, nil)
	descOffline          = prometheus.NewDesc("sluice_partitions_offline",
		"Partitions without a leader, exported by the active controller (0 elsewhere), so that sum() is the cluster's count.", nil, nil)
	descUnderReplicated = prometheus.NewDesc("sluice_partitions_under_replicated",
		"Partitions led by this broker whose ISR is smaller than their replica set.", nil, nil)
	descUnderMinISR = prometheus.NewDesc("sluice_partitions_under_min_isr",
		"Partitions led by this broker whose ISR is smaller than min.insync.replicas: acks=all produce fails.", nil, nil)
	descUnreachable = prometheus.NewDesc("sluice_brokers_unreachable",
		"Live brokers this broker has not heard from for the broker session timeout (fenced, on the controller's broker).", nil, nil)
	descReassigning = prometheus.NewDesc("sluice_partitions_reassigning",
		"Partitions led by this broker that are moving to another replica set.", nil, nil)
	descImbalance = prometheus.NewDesc("sluice_preferred_leader_imbalance",
		"Partitions this broker is the preferred leader of (their first replica) that another broker leads.", nil, nil)
	descLed          = prometheus.NewDesc("sluice_partitions_led", "Partitions this broker leads.", nil, nil)
	descFollowed     = prometheus.NewDesc("sluice_partitions_followed", "Partitions this broker hosts a follower replica of.", nil, nil)
	descOfflineLocal = prometheus.NewDesc("sluice_replicas_offline",
		"Replicas on this broker whose log failed (storage error); they neither lead nor follow.", nil, nil)
	descProducers = prometheus.NewDesc("sluice_idempotent_producers",
		"Idempotent producers whose sequences the partitions led by this broker track.", nil, nil)
	partitionLabels = []string{"topic", "partition"}
	descHW          = prometheus.NewDesc("sluice_partition_high_watermark",
		"The partition's high watermark: consumers read below it. Exported by the leader.", partitionLabels, nil)
	descLogStart = prometheus.NewDesc("sluice_partition_log_start_offset",
		"The partition's first offset kept. Exported by the leader.", partitionLabels, nil)
	descLogEnd = prometheus.NewDesc("sluice_partition_log_end_offset",
		"The leader's log end offset (LEO). Exported by the leader.", partitionLabels, nil)
	descSize = prometheus.NewDesc("sluice_partition_size_bytes",
		"The leader's log size on disk. Exported by the leader.", partitionLabels, nil)
)

// stateCollector computes the state gauges from the latest State.
type stateCollector struct{ m *Broker }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBrokers, descUnreachable, descReassigning, descImbalance, descTopics, descPartitions, descControllerActive, descOffline,
		descUnderReplicated, descUnderMinISR, descLed, descFollowed, descOfflineLocal, descProducers, descHW, descLogStart, descLogEnd, descSize} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.state.Load()
	if s == nil || s.Meta == nil {
		return // nothing known yet: no series rather than false zeros
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var offline, under, underMin, led, followed, moving, imbalance float64
	for _, p := range s.Meta.Partitions {
		st := p.State
		if st == nil {
			continue
		}
		if len(st.Replicas) > 0 && st.Replicas[0] == s.BrokerID && st.Leader != s.BrokerID {
			imbalance++
		}
		if st.Leader == s.BrokerID && len(st.AddingReplicas)+len(st.RemovingReplicas) > 0 {
			moving++
		}
		switch {
		case st.Leader < 0:
			offline++
		case st.Leader == s.BrokerID:
			led++
			if len(st.Isr) < len(st.Replicas) {
				under++
			}
			if s.MinISR != nil && len(st.Isr) < s.MinISR(st.Topic) {
				underMin++
			}
		default:
			for _, r := range st.Replicas {
				if r == s.BrokerID {
					followed++
				}
			}
		}
	}
	gauge(descBrokers, float64(s.LiveBrokers))
	gauge(descUnreachable, float64(s.Unreachable))
	gauge(descReassigning, moving)
	gauge(descImbalance, imbalance)
	gauge(descTopics, float64(len(s.Meta.Topics)))
	gauge(descPartitions, float64(len(s.Meta.Partitions)))
	gauge(descControllerActive, boolValue(s.Controller))
	if !s.Controller {
		offline = 0
	}
	gauge(descOffline, offline)
	gauge(descUnderReplicated, under)
	gauge(descUnderMinISR, underMin)
	gauge(descLed, led)
	gauge(descFollowed, followed)
	var failed, producers float64
	for _, ptr := range s.Replicas {
		r := ptr.Load()
		if r == nil {
			continue
		}
		if r.Error != messages.ErrorCode_NONE {
			failed++
		}
		if !r.Leader {
			continue
		}
		producers += float64(r.Producers)
		if !c.m.opts.PartitionLabels {
			continue
		}
		p := strconv.Itoa(int(r.Partition))
		gauge(descHW, float64(r.HighWatermark), r.Topic, p)
		gauge(descLogStart, float64(r.LogStartOffset), r.Topic, p)
		gauge(descLogEnd, float64(r.LogEndOffset), r.Topic, p)
		gauge(descSize, float64(r.SizeBytes), r.Topic, p)
	}
	gauge(descOfflineLocal, failed)
	gauge(descProducers, producers)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
