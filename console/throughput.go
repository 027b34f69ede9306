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

// The overview's live chart: records produced and fetched per second in
// the cluster. Produced records come from the partitions' high
// watermarks, fetched ones from the counters each replica keeps of what
// it sent to consumers; the console samples both every sampleEvery and
// keeps the last sampleCount samples. Sampling asks every broker for its
// replicas' state, so it runs only while someone has looked at the chart
// within watchedFor.

const (
	sampleEvery = 2 * time.Second
	sampleCount = 150 // five minutes
	watchedFor  = time.Minute
)

// sample is each topic's counters at one time: records produced (the sum
// of its partitions' high watermarks) and fetched.
type sample struct {
	at                time.Time
	produced, fetched map[string]int64
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
// seconds) and records produced and fetched per second between
// consecutive samples.
func (t *throughput) series(shown func(topic string) bool) (times []int64, produced, fetched []float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	times, produced, fetched = []int64{}, []float64{}, []float64{}
	for i := 1; i < len(t.samples); i++ {
		a, b := t.samples[i-1], t.samples[i]
		secs := b.at.Sub(a.at).Seconds()
		times = append(times, b.at.Unix())
		produced = append(produced, rate(a.produced, b.produced, shown, secs))
		fetched = append(fetched, rate(a.fetched, b.fetched, shown, secs))
	}
	return times, produced, fetched
}

// rate is how fast the counters of the topics shown grew from a to b,
// secs apart. A topic counts only when it is in both and its counter did
// not go back (the topic deleted and created again, a broker restarted).
func rate(a, b map[string]int64, shown func(string) bool, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	var grew int64
	for topic, n := range b {
		if was, ok := a[topic]; ok && n >= was && shown(topic) {
			grew += n - was
		}
	}
	return float64(grew) / secs
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
	s := sample{at: time.Now(), produced: make(map[string]int64, len(infos)), fetched: make(map[string]int64, len(infos))}
	for _, t := range infos {
		if strings.HasPrefix(t.Name, "__") {
			continue // internal topics: group commits
		}
		for _, p := range t.Partitions {
			s.produced[t.Name] += max(p.HighWatermark, 0)
			s.fetched[t.Name] += p.RecordsFetched
		}
	}
	c.rates.add(s)
}

// throughputJSON serves the chart's data, of the topics the visitor may
// describe.
func (c *Console) throughputJSON(w http.ResponseWriter, r *http.Request) {
	v, ok := c.visitor(w, r)
	if !ok {
		return
	}
	c.rates.watched.Store(time.Now().UnixNano())
	times, produced, fetched := c.rates.series(func(topic string) bool { return v.may(opDescribe, onTopic, topic) })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"time": times, "produced_per_second": produced, "fetched_per_second": fetched})
}
