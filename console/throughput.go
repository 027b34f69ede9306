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

// sample is the cluster's produced-records counter at one time.
type sample struct {
	at      time.Time
	records int64
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

// series is the chart's data: times (Unix seconds) and records per second
// between consecutive samples (0 where a topic went away).
func (t *throughput) series() (times []int64, rates []float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	times, rates = []int64{}, []float64{}
	for i := 1; i < len(t.samples); i++ {
		a, b := t.samples[i-1], t.samples[i]
		secs := b.at.Sub(a.at).Seconds()
		rate := 0.0
		if secs > 0 && b.records >= a.records {
			rate = float64(b.records-a.records) / secs
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
	var total int64
	for _, t := range infos {
		if strings.HasPrefix(t.Name, "__") {
			continue // internal topics: group commits
		}
		for _, p := range t.Partitions {
			total += max(p.HighWatermark, 0)
		}
	}
	c.rates.add(sample{at: time.Now(), records: total})
}

func (c *Console) throughputJSON(w http.ResponseWriter, r *http.Request) {
	c.rates.watched.Store(time.Now().UnixNano())
	times, rates := c.rates.series()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"time": times, "records_per_second": rates})
}
