package broker

import (
	"sync/atomic"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/metrics"
)

// publishMetrics hands the metrics the broker's current view: metadata,
// live brokers, controller role and the statuses of its replicas. It runs
// whenever one of them changes, so that a scrape reads them without
// messaging the broker.
func (b *brokerActor) publishMetrics() {
	if b.cfg.Metrics == nil {
		return
	}
	s := &metrics.State{BrokerID: b.cfg.ID, Controller: b.controller != nil, LiveBrokers: len(b.live), Unreachable: len(b.fenced), Meta: b.meta,
		Replicas: make([]*atomic.Pointer[messages.ReplicaState], 0, len(b.replicas))}
	if meta := b.meta; meta != nil {
		defaults := b.topicDefaults
		s.MinISR = func(topic string) int {
			if t := meta.Topics[topic]; t != nil {
				if c, err := actors.ParseTopicConfig(defaults, t.Configs); err == nil {
					return c.MinISR
				}
			}
			return defaults.MinISR
		}
	}
	for _, r := range b.replicas {
		s.Replicas = append(s.Replicas, r.status)
	}
	b.cfg.Metrics.Publish(s)
}
