package groups

import (
	"cmp"
	"slices"
)

// Subscription is one member as an assignor sees it.
type Subscription struct {
	MemberID string
	Topics   []string
	// Previous is the member's assignment in the last generation (only the
	// sticky assignor reads it).
	Previous []TopicPartitions
}

// AssignFunc computes a group's assignment: every partition of every topic
// in partitions (topic -> count; counts <= 0 are ignored) that some member
// subscribes to goes to exactly one member subscribing to its topic. The
// result has an entry for every member (nil when it gets nothing), sorted
// by topic and partition. It is a pure function of its input: the order of
// members and of their topics does not matter.
type AssignFunc func(members []Subscription, partitions map[string]int32) map[string][]TopicPartitions

var registry = map[string]AssignFunc{
	"range":      Range,
	"roundrobin": RoundRobin,
	"sticky":     Sticky,
}

// Lookup returns the assignor registered under name.
func Lookup(name string) (AssignFunc, bool) {
	f, ok := registry[name]
	return f, ok
}

// AssignorNames lists the registered assignors, sorted.
func AssignorNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Range is Kafka's RangeAssignor: for each topic, the members subscribing
// to it sorted by id get contiguous ranges of its partitions, the first
// (count mod members) of them one more than the others.
func Range(members []Subscription, partitions map[string]int32) map[string][]TopicPartitions {
	ms := normalizeSubs(members)
	owned := map[string][]tp{}
	for _, topic := range sortedTopics(partitions) {
		subs := subscribers(ms, topic)
		if len(subs) == 0 {
			continue
		}
		n, c := int(partitions[topic]), len(subs)
		per, extra := n/c, n%c
		for i, id := range subs {
			start := i*per + min(i, extra)
			length := per
			if i < extra {
				length++
			}
			for p := start; p < start+length; p++ {
				owned[id] = append(owned[id], tp{topic, int32(p)})
			}
		}
	}
	return collect(ms, owned)
}

// RoundRobin is Kafka's RoundRobinAssignor: all subscribed partitions,
// sorted by topic then partition, are dealt in turn to the members sorted
// by id, skipping members that do not subscribe to the partition's topic.
func RoundRobin(members []Subscription, partitions map[string]int32) map[string][]TopicPartitions {
	ms := normalizeSubs(members)
	owned := map[string][]tp{}
	if len(ms) == 0 {
		return collect(ms, owned)
	}
	next := 0 // the member the circular iterator points at
	for _, topic := range sortedTopics(partitions) {
		if len(subscribers(ms, topic)) == 0 {
			continue
		}
		for p := range partitions[topic] {
			for !slices.Contains(ms[next].Topics, topic) {
				next = (next + 1) % len(ms)
			}
			owned[ms[next].MemberID] = append(owned[ms[next].MemberID], tp{topic, p})
			next = (next + 1) % len(ms)
		}
	}
	return collect(ms, owned)
}

// tp is one topic partition.
type tp struct {
	topic string
	p     int32
}

func compareTP(a, b tp) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.p, b.p))
}

// normalizeSubs returns the members sorted by id with sorted, deduplicated
// topics, so that every assignor is independent of its input's order.
func normalizeSubs(members []Subscription) []Subscription {
	ms := make([]Subscription, len(members))
	for i, m := range members {
		m.Topics = slices.Compact(slices.Sorted(slices.Values(m.Topics)))
		ms[i] = m
	}
	slices.SortFunc(ms, func(a, b Subscription) int { return cmp.Compare(a.MemberID, b.MemberID) })
	return ms
}

// sortedTopics lists the topics that have partitions.
func sortedTopics(partitions map[string]int32) []string {
	var out []string
	for t, n := range partitions {
		if n > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// subscribers lists, in id order, the members of ms subscribing to topic.
func subscribers(ms []Subscription, topic string) []string {
	var out []string
	for _, m := range ms {
		if _, ok := slices.BinarySearch(m.Topics, topic); ok {
			out = append(out, m.MemberID)
		}
	}
	return out
}

// collect turns owned partitions into sorted assignments, one per member.
func collect(ms []Subscription, owned map[string][]tp) map[string][]TopicPartitions {
	out := make(map[string][]TopicPartitions, len(ms))
	for _, m := range ms {
		out[m.MemberID] = toAssignment(owned[m.MemberID])
	}
	return out
}

func toAssignment(tps []tp) []TopicPartitions {
	if len(tps) == 0 {
		return nil
	}
	tps = slices.Clone(tps)
	slices.SortFunc(tps, compareTP)
	tps = slices.Compact(tps)
	var out []TopicPartitions
	for _, x := range tps {
		if len(out) == 0 || out[len(out)-1].Topic != x.topic {
			out = append(out, TopicPartitions{Topic: x.topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, x.p)
	}
	return out
}

func fromAssignment(a []TopicPartitions) []tp {
	var out []tp
	for _, t := range a {
		for _, p := range t.Partitions {
			out = append(out, tp{t.Topic, p})
		}
	}
	return out
}
