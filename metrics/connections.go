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

// InFlightBudget exports the in-flight byte budget shared by the
// listeners: its limit, what is held now, and how often a reader waited.
func (m *Broker) InFlightBudget(limit int64, used, waits Count) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_inflight_bytes_limit",
			Help: "Bytes of requests and answers in flight the broker holds at most (--max-inflight-bytes)."},
			func() float64 { return float64(limit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_inflight_bytes",
			Help: "Bytes of requests read and not yet answered, and of answers not yet written, held now."},
			func() float64 { return float64(used()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_inflight_budget_waits_total",
			Help: "Times a connection waited to read its next request because the in-flight budget was full."},
			func() float64 { return float64(waits()) }))
}
