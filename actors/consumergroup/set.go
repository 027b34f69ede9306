package consumergroup

import (
	"cmp"
	"maps"
	"slices"

	"github.com/sluicemq/sluice/actors/groups"
)

// tp is one partition of one topic.
type tp struct {
	topic string
	p     int32
}

// set is a set of partitions.
type set map[tp]struct{}

func setOf(a []groups.TopicPartitions) set {
	s := set{}
	for _, t := range a {
		for _, p := range t.Partitions {
			s[tp{t.Topic, p}] = struct{}{}
		}
	}
	return s
}

func (s set) has(x tp) bool { _, ok := s[x]; return ok }

// minus is the partitions of s not in o.
func (s set) minus(o set) set {
	out := set{}
	for x := range s {
		if !o.has(x) {
			out[x] = struct{}{}
		}
	}
	return out
}

// intersects reports whether s and o share a partition.
func (s set) intersects(o set) bool {
	for x := range s {
		if o.has(x) {
			return true
		}
	}
	return false
}

func (s set) subsetOf(o set) bool {
	for x := range s {
		if !o.has(x) {
			return false
		}
	}
	return true
}

func (s set) equal(o set) bool { return len(s) == len(o) && s.subsetOf(o) }

// list is s sorted by topic and partition, grouped by topic.
func (s set) list() []groups.TopicPartitions {
	keys := slices.SortedFunc(maps.Keys(s), func(a, b tp) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.p, b.p))
	})
	var out []groups.TopicPartitions
	for _, x := range keys {
		if len(out) == 0 || out[len(out)-1].Topic != x.topic {
			out = append(out, groups.TopicPartitions{Topic: x.topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, x.p)
	}
	return out
}
