package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The overview's live chart: records produced per second in the whole
// cluster, from the sum of the partitions' high watermarks, sampled by the
// console every sampleEvery and kept for the last sampleCount samples.
// Sampling asks every broker for its replicas' state, so it runs only
// while someone has looked at the chart within watchedFor.

const (
	sampleEvery = 2 * time.Second
	sampleCount = 150 // five minutes
	watchedFor  = time.Minute
)

// sample is each topic's produced-records counter (the sum of its
// partitions' high watermarks) at one time.
type sample struct {
	at      time.Time
	records map[string]int64
}

// throughput keeps the recent samples.
type throughput struct {
	mu      sync.Mutex
	samples []sample
	watched atomic.Int64 // UnixNano of the last look at the chart
}

func (t *throughput) add(s sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.samples = append(t.samples, s)
	if len(t.samples) > sampleCount+1 {
		t.samples = t.samples[len(t.samples)-sampleCount-1:]
	}
}

func (t *throughput) reset() {
	t.mu.Lock()
	t.samples = nil
	t.mu.Unlock()
}

// series is the chart's data for the topics shown selects: times (Unix
// seconds) and records per second between consecutive samples. A topic
// counts in an interval only when it is in both samples and did not go
// back (deleted and created again).
func (t *throughput) series(shown func(topic string) bool) (times []int64, rates []float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	times, rates = []int64{}, []float64{}
	for i := 1; i < len(t.samples); i++ {
		a, b := t.samples[i-1], t.samples[i]
		var produced int64
		for topic, n := range b.records {
			if was, ok := a.records[topic]; ok && n >= was && shown(topic) {
				produced += n - was
			}
		}
		rate := 0.0
		if secs := b.at.Sub(a.at).Seconds(); secs > 0 {
			rate = float64(produced) / secs
		}
		times, rates = append(times, b.at.Unix()), append(rates, rate)
	}
	return times, rates
}

// Run samples the cluster until ctx ends; the broker starts it beside the
// console.
func (c *Console) Run(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	sampling := false
	for {
		watched := time.Since(time.Unix(0, c.rates.watched.Load())) < watchedFor
		if watched && !sampling {
			c.rates.reset() // a rate across the pause would mislead
		}
		if sampling = watched; sampling {
			c.sampleOnce(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *Console) sampleOnce(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, sampleEvery)
	defer cancel()
	infos, err := c.cfg.Admin.DescribeTopics(sctx)
	if err != nil {
		return // a gap in the chart
	}
	records := make(map[string]int64, len(infos))
	for _, t := range infos {
		if strings.HasPrefix(t.Name, "__") {
			continue // internal topics: group commits
		}
		for _, p := range t.Partitions {
			records[t.Name] += max(p.HighWatermark, 0)
		}
	}
	c.rates.add(sample{at: time.Now(), records: records})
}

// throughputJSON serves the chart's data, of the topics the visitor may
// describe.
func (c *Console) throughputJSON(w http.ResponseWriter, r *http.Request) {
	v, ok := c.visitor(w, r)
	if !ok {
		return
	}
	c.rates.watched.Store(time.Now().UnixNano())
	times, rates := c.rates.series(func(topic string) bool { return v.may(opDescribe, onTopic, topic) })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"time": times, "records_per_second": rates})
}
