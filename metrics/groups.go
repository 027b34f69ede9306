package metrics

import (
	"strconv"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/cluster"
)

// GroupView is what a group coordinator publishes of its group: members
// and committed offsets. Lag is computed in PromQL from the committed
// offsets and the leaders' high watermarks (see the README).
type GroupView struct {
	Members int
	// Committed maps each committed partition to its offset.
	Committed map[cluster.TopicPartition]int64
}

// groupViews are the views of the groups coordinated by this broker.
type groupViews struct {
	mu    sync.Mutex
	views map[string]GroupView
}

var (
	descGroupMembers   = prometheus.NewDesc("sluice_group_members", "Members of a consumer group coordinated by this broker.", []string{"group"}, nil)
	descGroupCommitted = prometheus.NewDesc("sluice_group_committed_offset",
		"A consumer group's committed offset (the next record it reads) of a partition, exported by the group's coordinator.",
		[]string{"group", "topic", "partition"}, nil)
)

// PublishGroup replaces the view of group; the coordinator calls it when
// members or commits change. The view must not be changed afterwards.
func (m *Broker) PublishGroup(group string, v GroupView) {
	if m == nil {
		return
	}
	m.groups.mu.Lock()
	m.groups.views[group] = v
	m.groups.mu.Unlock()
}

// DropGroup forgets a group this broker no longer coordinates.
func (m *Broker) DropGroup(group string) {
	if m == nil {
		return
	}
	m.groups.mu.Lock()
	delete(m.groups.views, group)
	m.groups.mu.Unlock()
}

type groupCollector struct{ m *Broker }

func (c groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGroupMembers
	ch <- descGroupCommitted
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.groups.mu.Lock()
	defer c.m.groups.mu.Unlock()
	for group, v := range c.m.groups.views {
		ch <- prometheus.MustNewConstMetric(descGroupMembers, prometheus.GaugeValue, float64(v.Members), group)
		if !c.m.opts.PartitionLabels {
			continue
		}
		for tp, off := range v.Committed {
			ch <- prometheus.MustNewConstMetric(descGroupCommitted, prometheus.GaugeValue, float64(off), group, tp.Topic, strconv.Itoa(int(tp.Partition)))
		}
	}
}

// DataDir exports the free space of the file system that holds dir.
func (m *Broker) DataDir(dir string) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_data_dir_free_bytes",
		Help: "Free space for the broker on the file system of its data directory.", ConstLabels: prometheus.Labels{"dir": dir}},
		func() float64 {
			var st syscall.Statfs_t
			if err := syscall.Statfs(dir, &st); err != nil {
				return -1
			}
			return float64(st.Bavail) * float64(st.Bsize)
		}))
}
