package metrics

import "github.com/prometheus/client_golang/prometheus"

// Count reads a counter or gauge kept elsewhere (the listeners' atomics).
type Count func() int64

// Listener exports one listener's connection counts: open now, and those
// closed by a limit, by reason.
func (m *Broker) Listener(listener string, open Count, closed map[string]Count) {
	if m == nil {
		return
	}
	labels := prometheus.Labels{"listener": listener}
	if open != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_connections",
			Help: "Connections a listener holds now.", ConstLabels: labels}, func() float64 { return float64(open()) }))
	}
	for reason, n := range closed {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_connections_refused_total",
			Help:        "Connections a listener closed at once or early, by reason (a limit, idleness).",
			ConstLabels: prometheus.Labels{"listener": listener, "reason": reason}}, func() float64 { return float64(n()) }))
	}
}

// Guard exports the transport guard's refusals, by reason.
func (m *Broker) Guard(refused map[string]Count) {
	if m == nil {
		return
	}
	for reason, n := range refused {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_guard_refusals_total",
			Help:        "Streams or messages the transport guard refused, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 { return float64(n()) }))
	}
}
