// Package metrics is one broker's Prometheus metrics, on a registry of
// its own (never the global one, so that several brokers in one process
// and tests do not collide).
//
// Counters and histograms are added to by the actors as things happen.
// State gauges are computed at scrape time from the snapshots the actors
// publish (the broker's metadata, each replica's status): a scrape never
// sends a message, so it never waits behind a busy mailbox.
//
// Every method is safe on a nil *Broker, which counts nothing: actors
// started without metrics (unit tests) call them all the same.
package metrics

import (
	"runtime"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// Build names the binary, for sluice_build_info.
type Build struct {
	Version, Commit string
}

// Options are a broker's metric settings.
type Options struct {
	// PartitionLabels exports the per-partition series (HW, log start,
	// log end, size); a cluster with many partitions may turn them off.
	PartitionLabels bool
}

// Broker is one broker's metrics.
type Broker struct {
	Registry *prometheus.Registry
	opts     Options
	state    atomic.Pointer[State]
	c        *counters
	groups   groupViews
}

// State is what the broker actor publishes whenever its view changes:
// read at scrape time, never written by the scrape.
type State struct {
	BrokerID int32
	// Controller: this broker is the active controller.
	Controller bool
	// LiveBrokers is how many brokers are registered and alive;
	// Unreachable how many of them have not answered this broker's pings
	// for the broker session timeout.
	LiveBrokers, Unreachable int
	// Meta is the latest cluster metadata (nil: none loaded yet).
	Meta *cluster.Snapshot
	// MinISR is a topic's min.insync.replicas.
	MinISR func(topic string) int
	// Replicas are the statuses of the replicas this broker hosts; a nil
	// status is a replica still opening its log.
	Replicas []*atomic.Pointer[messages.ReplicaState]
}

// New returns a broker's metrics with the build info, Go runtime and
// process collectors registered.
func New(build Build, opts Options) *Broker {
	m := &Broker{Registry: prometheus.NewRegistry(), opts: opts}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_build_info",
		Help: "The broker's version, commit and Go version; always 1."}, []string{"version", "commit", "goversion"})
	info.WithLabelValues(build.Version, build.Commit, runtime.Version()).Set(1)
	m.groups.views = map[string]GroupView{}
	m.Registry.MustRegister(info, stateCollector{m}, groupCollector{m})
	m.c = newCounters(m.Registry)
	return m
}

// Publish replaces the state the gauges are computed from.
func (m *Broker) Publish(s *State) {
	if m != nil {
		m.state.Store(s)
	}
}

// Ready reports whether the broker has loaded its metadata and every
// replica it hosts has opened its log or reported it offline; why says
// what it still waits for.
func (m *Broker) Ready() (ok bool, why string) {
	if m == nil {
		return false, "no metrics"
	}
	s := m.state.Load()
	switch {
	case s == nil || s.Meta == nil:
		return false, "the cluster metadata is not loaded yet"
	}
	opening := 0
	for _, r := range s.Replicas {
		if r.Load() == nil {
			opening++
		}
	}
	if opening > 0 {
		return false, plural(opening, "replica is", "replicas are") + " still opening their logs"
	}
	return true, ""
}
