package groups

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func sub(id string, topics ...string) Subscription { return Subscription{MemberID: id, Topics: topics} }

func tps(topic string, ps ...int32) TopicPartitions {
	return TopicPartitions{Topic: topic, Partitions: ps}
}

func TestAssignorExamples(t *testing.T) {
	two := map[string]int32{"t0": 3, "t1": 3}
	cases := []struct {
		name       string
		assign     AssignFunc
		members    []Subscription
		partitions map[string]int32
		want       map[string][]TopicPartitions
	}{
		// Kafka's RangeAssignor javadoc.
		{"range: two topics of 3, two members", Range,
			[]Subscription{sub("C1", "t0", "t1"), sub("C0", "t0", "t1")}, two,
			map[string][]TopicPartitions{"C0": {tps("t0", 0, 1), tps("t1", 0, 1)}, "C1": {tps("t0", 2), tps("t1", 2)}}},
		{"range: per topic, only its subscribers", Range,
			[]Subscription{sub("a", "t0"), sub("b", "t0", "t1"), sub("c", "t1")}, map[string]int32{"t0": 5, "t1": 2},
			map[string][]TopicPartitions{"a": {tps("t0", 0, 1, 2)}, "b": {tps("t0", 3, 4), tps("t1", 0)}, "c": {tps("t1", 1)}}},
		{"range: unknown and empty topics get nobody", Range,
			[]Subscription{sub("a", "t0", "gone", "empty")}, map[string]int32{"t0": 1, "empty": 0},
			map[string][]TopicPartitions{"a": {tps("t0", 0)}}},
		{"range: more members than partitions", Range,
			[]Subscription{sub("a", "t0"), sub("b", "t0"), sub("c", "t0")}, map[string]int32{"t0": 2},
			map[string][]TopicPartitions{"a": {tps("t0", 0)}, "b": {tps("t0", 1)}, "c": nil}},
		// Kafka's RoundRobinAssignor javadoc, both examples.
		{"roundrobin: same subscriptions", RoundRobin,
			[]Subscription{sub("C0", "t0", "t1"), sub("C1", "t1", "t0")}, two,
			map[string][]TopicPartitions{"C0": {tps("t0", 0, 2), tps("t1", 1)}, "C1": {tps("t0", 1), tps("t1", 0, 2)}}},
		{"roundrobin: skips members not subscribed", RoundRobin,
			[]Subscription{sub("C0", "t0"), sub("C1", "t0", "t1"), sub("C2", "t0", "t1", "t2")}, map[string]int32{"t0": 1, "t1": 2, "t2": 3},
			map[string][]TopicPartitions{"C0": {tps("t0", 0)}, "C1": {tps("t1", 0)}, "C2": {tps("t1", 1), tps("t2", 0, 1, 2)}}},
		// Kafka's StickyAssignor javadoc: C1 leaves, C0 and C2 keep theirs.
		{"sticky: a member leaves", Sticky,
			[]Subscription{
				{MemberID: "C0", Topics: []string{"t0", "t1", "t2", "t3"}, Previous: []TopicPartitions{tps("t0", 0), tps("t1", 1), tps("t3", 0)}},
				{MemberID: "C2", Topics: []string{"t0", "t1", "t2", "t3"}, Previous: []TopicPartitions{tps("t1", 0), tps("t2", 1)}},
			}, map[string]int32{"t0": 2, "t1": 2, "t2": 2, "t3": 2},
			map[string][]TopicPartitions{"C0": {tps("t0", 0), tps("t1", 1), tps("t2", 0), tps("t3", 0)}, "C2": {tps("t0", 1), tps("t1", 0), tps("t2", 1), tps("t3", 1)}}},
		{"sticky: fresh group balances", Sticky,
			[]Subscription{sub("b", "t0"), sub("a", "t0")}, map[string]int32{"t0": 3},
			map[string][]TopicPartitions{"a": {tps("t0", 0, 2)}, "b": {tps("t0", 1)}}},
		{"sticky: drops what is no longer valid, keeps the rest", Sticky,
			[]Subscription{
				{MemberID: "a", Topics: []string{"t0"}, Previous: []TopicPartitions{tps("t0", 0, 1, 7), tps("t1", 0)}},
				{MemberID: "b", Topics: []string{"t0", "t1"}, Previous: []TopicPartitions{tps("t0", 1, 2)}},
			}, map[string]int32{"t0": 3, "t1": 1},
			map[string][]TopicPartitions{"a": {tps("t0", 0, 1)}, "b": {tps("t0", 2), tps("t1", 0)}}},
		{"sticky: a new member takes from the most loaded", Sticky,
			[]Subscription{
				{MemberID: "a", Topics: []string{"t0"}, Previous: []TopicPartitions{tps("t0", 0, 1, 2)}},
				{MemberID: "b", Topics: []string{"t0"}, Previous: []TopicPartitions{tps("t0", 3, 4, 5)}},
				{MemberID: "c", Topics: []string{"t0"}},
			}, map[string]int32{"t0": 6},
			map[string][]TopicPartitions{"a": {tps("t0", 0, 1)}, "b": {tps("t0", 3, 4)}, "c": {tps("t0", 2, 5)}}},
		{"no members", Sticky, nil, two, map[string][]TopicPartitions{}},
	}
	for _, c := range cases {
		got := c.assign(c.members, c.partitions)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

func TestLookup(t *testing.T) {
	if got := AssignorNames(); !slices.Equal(got, []string{"range", "roundrobin", "sticky"}) {
		t.Fatalf("names %v", got)
	}
	if _, ok := Lookup("cooperative-sticky"); ok {
		t.Fatal("cooperative-sticky is not implemented")
	}
}

// randomAssignInput makes members with random subscriptions over t0..t4,
// random partition counts (0 and missing topics included), and random,
// possibly invalid or overlapping previous assignments.
func randomAssignInput(rng *rand.Rand, homogeneous bool) ([]Subscription, map[string]int32) {
	topics := []string{"t0", "t1", "t2", "t3", "t4"}
	partitions := map[string]int32{}
	for _, tp := range topics {
		if rng.IntN(6) > 0 {
			partitions[tp] = int32(rng.IntN(12))
		}
	}
	common := randomSubset(rng, topics)
	members := make([]Subscription, 1+rng.IntN(8))
	for i := range members {
		m := Subscription{MemberID: fmt.Sprintf("m%d", rng.IntN(100)*10+i), Topics: common}
		if !homogeneous {
			m.Topics = randomSubset(rng, topics)
		}
		for _, tp := range randomSubset(rng, topics) {
			var ps []int32
			for p := range int32(rng.IntN(5)) {
				ps = append(ps, p*int32(1+rng.IntN(3)))
			}
			if len(ps) > 0 {
				m.Previous = append(m.Previous, TopicPartitions{tp, ps})
			}
		}
		members[i] = m
	}
	return members, partitions
}

func randomSubset(rng *rand.Rand, from []string) []string {
	var out []string
	for _, s := range from {
		if rng.IntN(2) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// checkAssignment asserts the invariants every assignor meets.
func checkAssignment(t *testing.T, what string, members []Subscription, partitions map[string]int32, got map[string][]TopicPartitions) map[tp]string {
	t.Helper()
	owner := map[tp]string{}
	for _, m := range members {
		a, ok := got[m.MemberID]
		if !ok {
			t.Fatalf("%s: member %s missing from %v", what, m.MemberID, got)
		}
		if !reflect.DeepEqual(a, toAssignment(fromAssignment(a))) {
			t.Fatalf("%s: %s's assignment %v not sorted", what, m.MemberID, a)
		}
		for _, x := range fromAssignment(a) {
			if !slices.Contains(m.Topics, x.topic) || x.p < 0 || x.p >= partitions[x.topic] {
				t.Fatalf("%s: %s got %v: not subscribed or no such partition", what, m.MemberID, x)
			}
			if other, dup := owner[x]; dup {
				t.Fatalf("%s: %v given to %s and %s", what, x, other, m.MemberID)
			}
			owner[x] = m.MemberID
		}
	}
	if len(got) != len(members) {
		t.Fatalf("%s: %d entries for %d members", what, len(got), len(members))
	}
	for topic, n := range partitions {
		subscribed := slices.ContainsFunc(members, func(m Subscription) bool { return slices.Contains(m.Topics, topic) })
		for p := range n {
			if _, ok := owner[tp{topic, p}]; subscribed && !ok {
				t.Fatalf("%s: %s-%d unassigned", what, topic, p)
			}
		}
	}
	return owner
}

func TestAssignorInvariantsRandomized(t *testing.T) {
	for _, name := range AssignorNames() {
		assign, _ := Lookup(name)
		for seed := uint64(0); seed < 400; seed++ {
			rng := rand.New(rand.NewPCG(seed, 11))
			members, partitions := randomAssignInput(rng, seed%2 == 0)
			what := fmt.Sprintf("%s seed %d", name, seed)
			got := assign(members, partitions)
			checkAssignment(t, what, members, partitions, got)
			shuffled := slices.Clone(members)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if again := assign(shuffled, partitions); !reflect.DeepEqual(again, got) {
				t.Fatalf("%s: not deterministic:\n%v\n%v", what, got, again)
			}
		}
	}
}

// Sticky: balanced; unchanged input changes nothing; when a member leaves
// (or joins) a group with common subscriptions, only its partitions move.
func TestStickyRandomized(t *testing.T) {
	for seed := uint64(0); seed < 600; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		members, partitions := randomAssignInput(rng, seed%3 != 0)
		what := fmt.Sprintf("seed %d", seed)
		got := Sticky(members, partitions)
		owner := checkAssignment(t, what, members, partitions, got)
		checkBalanced(t, what, members, got)

		next := withPrevious(members, got)
		if again := Sticky(next, partitions); !reflect.DeepEqual(again, got) {
			t.Fatalf("%s: unchanged input moved partitions:\n%v\n%v", what, got, again)
		}
		if seed%3 == 0 {
			continue // the rest needs common subscriptions
		}
		gone := rng.IntN(len(next))
		left := slices.Delete(slices.Clone(next), gone, gone+1)
		after := checkAssignment(t, what+" after leave", left, partitions, Sticky(left, partitions))
		for x, was := range owner {
			if was != next[gone].MemberID && after[x] != was {
				t.Fatalf("%s: %v moved from %s to %s when %s left", what, x, was, after[x], next[gone].MemberID)
			}
		}
		joined := append(slices.Clone(next), Subscription{MemberID: "new", Topics: next[0].Topics})
		after = checkAssignment(t, what+" after join", joined, partitions, Sticky(joined, partitions))
		for x, was := range owner {
			if now := after[x]; now != was && now != "new" {
				t.Fatalf("%s: %v moved from %s to %s, not to the new member", what, x, was, now)
			}
		}
	}
}

func withPrevious(members []Subscription, a map[string][]TopicPartitions) []Subscription {
	out := slices.Clone(members)
	for i := range out {
		out[i].Previous = a[out[i].MemberID]
	}
	return out
}

// checkBalanced: no partition's owner has two more than another member
// subscribing to its topic.
func checkBalanced(t *testing.T, what string, members []Subscription, a map[string][]TopicPartitions) {
	t.Helper()
	count := func(id string) int { return len(fromAssignment(a[id])) }
	for _, m := range members {
		for _, x := range fromAssignment(a[m.MemberID]) {
			for _, o := range members {
				if slices.Contains(o.Topics, x.topic) && count(m.MemberID)-count(o.MemberID) > 1 {
					t.Fatalf("%s: %s has %d, %s has %d and could take %v", what, m.MemberID, count(m.MemberID), o.MemberID, count(o.MemberID), x)
				}
			}
		}
	}
}
