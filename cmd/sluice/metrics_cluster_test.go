package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sumSeries adds the values of every series named name (with any labels
// matching the given label="value" pairs) over the live brokers' scrapes.
func sumSeries(scrapes []map[string]float64, name string, labels ...string) float64 {
	total := 0.0
	for _, m := range scrapes {
		for series, v := range m {
			if series != name && !strings.HasPrefix(series, name+"{") {
				continue
			}
			match := true
			for _, l := range labels {
				match = match && strings.Contains(series, l)
			}
			if match {
				total += v
			}
		}
	}
	return total
}

// scrapeLive scrapes every running broker of the cluster.
func (c *testCluster) scrapeLive() []map[string]float64 {
	var out []map[string]float64
	for _, b := range c.brokers {
		if b.alive() {
			out = append(out, scrape(c.t, httpAddr(c.t, b)))
		}
	}
	return out
}

// The metrics move as the cluster does: on a real three-broker cluster,
// records produced equal records acknowledged; a group's lag (the leader's
// high watermark minus the coordinator's committed offset, as the README's
// PromQL computes it) falls to 0 once it has caught up; a partition is
// under-replicated while a follower is down and not after it is back, with
// an ISR shrink and expansion counted; a leader's death counts an election.
func TestMetricsFollowTheCluster(t *testing.T) {
	// One unreplicated offsets partition, so that obs-0 is the only
	// partition a follower's death leaves under-replicated.
	c := startCluster(t, 3, "--offsets-partitions", "1", "--offsets-replication-factor", "1")
	c.createTopic("obs", 1, 3, nil)
	c.waitFullyReplicated("obs", time.Minute)
	var in strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&in, "r%d\n", i)
	}
	leader := c.leaderOf("obs", 0)
	c.brokers[leader].cli(in.String(), "produce", "obs", "--acks", "all")
	c.waitFor("500 records produced in the metrics", 30*time.Second, func() bool {
		return sumSeries(c.scrapeLive(), "sluice_records_produced_total", `topic="obs"`) == 500
	})
	scrapes := c.scrapeLive()
	if n := sumSeries(scrapes, "sluice_produce_duration_seconds_count", `acks="all"`); n < 1 {
		t.Errorf("no acks=all produce latency observed: %v", n)
	}
	if n := sumSeries(scrapes, "sluice_replication_out_bytes_total"); n <= 0 {
		t.Errorf("no replication bytes out: %v", n)
	}
	if n := sumSeries(scrapes, "sluice_controller_active"); n != 1 {
		t.Errorf("%v active controllers", n)
	}

	// A group reads everything and commits: lag 0.
	out := c.brokers[leader].cli("", "consume", "obs", "--group", "og", "--from-beginning", "--max", "500")
	if got := strings.Count(out, "\n"); got != 500 {
		t.Fatalf("consumed %d records", got)
	}
	c.waitFor("group og's lag is 0", 30*time.Second, func() bool {
		s := c.scrapeLive()
		hw := sumSeries(s, "sluice_partition_high_watermark", `topic="obs"`, `partition="0"`)
		committed := sumSeries(s, "sluice_group_committed_offset", `group="og"`, `topic="obs"`, `partition="0"`)
		return hw == 500 && committed == 500
	})
	if n := sumSeries(c.scrapeLive(), "sluice_fetched_bytes_total", `topic="obs"`); n <= 0 {
		t.Errorf("no bytes fetched counted: %v", n)
	}

	// A follower down: under-replicated, then healthy again.
	var follower int32
	for _, id := range c.ids() {
		if id != leader {
			follower = id
		}
	}
	c.brokers[follower].kill()
	c.waitFor("obs-0 under-replicated", time.Minute, func() bool {
		return sumSeries(c.scrapeLive(), "sluice_partitions_under_replicated") == 1
	})
	c.brokers[follower].start()
	c.waitFor("obs-0 fully replicated in the metrics", time.Minute, func() bool {
		return sumSeries(c.scrapeLive(), "sluice_partitions_under_replicated") == 0
	})
	scrapes = c.scrapeLive()
	if sumSeries(scrapes, "sluice_isr_shrinks_total") < 1 || sumSeries(scrapes, "sluice_isr_expands_total") < 1 {
		t.Errorf("ISR shrinks %v, expands %v", sumSeries(scrapes, "sluice_isr_shrinks_total"), sumSeries(scrapes, "sluice_isr_expands_total"))
	}

	// The leader dies: an election is counted.
	before := 0.0
	for id, b := range c.brokers {
		if id != leader {
			before += sumSeries([]map[string]float64{scrape(t, httpAddr(t, b))}, "sluice_leader_elections_total")
		}
	}
	c.brokers[leader].kill()
	c.waitFor("an election counted", time.Minute, func() bool {
		return sumSeries(c.scrapeLive(), "sluice_leader_elections_total") > before
	})
	t.Logf("elections before %v, after %s", before, strconv.FormatFloat(sumSeries(c.scrapeLive(), "sluice_leader_elections_total"), 'f', -1, 64))
}
