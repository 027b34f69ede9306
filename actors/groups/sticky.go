package groups

import (
	"cmp"
	"slices"
)

// Sticky keeps partitions where they are while keeping the group balanced:
//
//  1. every member keeps the partitions of its previous assignment that are
//     still valid: it still subscribes to the topic, the partition still
//     exists, and no member earlier in id order already kept it;
//  2. each partition left over goes to the least loaded member subscribing
//     to its topic (partitions with the fewest candidates first; ties by
//     member id);
//  3. while a member owns a partition that a member with at least two fewer
//     partitions could take, one such partition moves from the most loaded
//     member to the least loaded candidate (preferring a partition the
//     candidate had before, then one placed in step 2).
//
// The result is balanced in Kafka's sense: for every partition, its owner
// has at most one more partition than any other member subscribing to its
// topic. With unchanged members and partitions nothing moves; when members
// with the same subscriptions leave, only their partitions move. (With
// differing subscriptions, keeping the balance can move others' too.)
func Sticky(members []Subscription, partitions map[string]int32) map[string][]TopicPartitions {
	ms := normalizeSubs(members)
	s := &sticky{
		partitions: partitions,
		candidates: map[string][]string{},
		owner:      map[tp]string{},
		owned:      map[string][]tp{},
		prev:       map[tp]string{},
		subscribed: map[string]map[string]bool{},
	}
	for _, m := range ms {
		s.ids = append(s.ids, m.MemberID)
		s.subscribed[m.MemberID] = map[string]bool{}
		for _, t := range m.Topics {
			s.subscribed[m.MemberID][t] = true
		}
	}
	for _, t := range sortedTopics(partitions) {
		if subs := subscribers(ms, t); len(subs) > 0 {
			s.candidates[t] = subs
		}
	}
	s.keep(ms)
	s.place()
	for s.moveOne() {
	}
	return collect(ms, s.owned)
}

type sticky struct {
	partitions map[string]int32
	ids        []string            // members in id order
	candidates map[string][]string // topic -> subscribing members, id order
	owner      map[tp]string
	owned      map[string][]tp
	prev       map[tp]string // previous owner that kept or could not keep it
	subscribed map[string]map[string]bool
}

func (s *sticky) keep(ms []Subscription) {
	for _, m := range ms {
		for _, x := range fromAssignment(m.Previous) {
			if _, taken := s.prev[x]; !taken {
				s.prev[x] = m.MemberID
			}
			valid := x.p >= 0 && x.p < s.partitions[x.topic] && s.subscribed[m.MemberID][x.topic]
			if _, taken := s.owner[x]; valid && !taken {
				s.give(x, m.MemberID)
			}
		}
	}
}

func (s *sticky) place() {
	var free []tp
	for t := range s.candidates {
		for p := range s.partitions[t] {
			if _, ok := s.owner[tp{t, p}]; !ok {
				free = append(free, tp{t, p})
			}
		}
	}
	slices.SortFunc(free, func(a, b tp) int {
		return cmp.Or(cmp.Compare(len(s.candidates[a.topic]), len(s.candidates[b.topic])), compareTP(a, b))
	})
	for _, x := range free {
		s.give(x, s.leastLoaded(x.topic))
	}
}

// moveOne makes one balancing move and reports whether there was one.
func (s *sticky) moveOne() bool {
	if len(s.ids) == 0 {
		return false
	}
	order := slices.Clone(s.ids)
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(len(s.owned[b]), len(s.owned[a])) })
	least := len(s.owned[order[len(order)-1]])
	for _, a := range order {
		if len(s.owned[a])-least < 2 {
			return false // nobody after a is loaded enough to give
		}
		for _, t := range s.topicsOf(a) {
			b := s.leastLoaded(t)
			if len(s.owned[a])-len(s.owned[b]) >= 2 {
				x := s.pick(a, t, b)
				s.take(x, a)
				s.give(x, b)
				return true
			}
		}
	}
	return false
}

// pick chooses which of a's partitions of topic t goes to b: one b had
// before, else one a did not have before, else the highest.
func (s *sticky) pick(a, t, b string) tp {
	var best tp
	rank := -1
	for _, x := range s.owned[a] {
		if x.topic != t {
			continue
		}
		r := 0
		switch s.prev[x] {
		case b:
			r = 2
		case a:
		default:
			r = 1
		}
		if r > rank || (r == rank && x.p > best.p) {
			best, rank = x, r
		}
	}
	return best
}

func (s *sticky) leastLoaded(topic string) string {
	var best string
	for _, id := range s.candidates[topic] {
		if best == "" || len(s.owned[id]) < len(s.owned[best]) {
			best = id
		}
	}
	return best
}

func (s *sticky) topicsOf(id string) []string {
	var out []string
	for _, x := range s.owned[id] {
		out = append(out, x.topic)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *sticky) give(x tp, id string) {
	s.owner[x] = id
	s.owned[id] = append(s.owned[id], x)
}

func (s *sticky) take(x tp, id string) {
	delete(s.owner, x)
	s.owned[id] = slices.DeleteFunc(s.owned[id], func(y tp) bool { return y == x })
}
