package election

import "slices"

// PreferredOutcome is what a preferred-leader election did to a partition.
type PreferredOutcome int

const (
	// PreferredElected: the preferred replica leads now.
	PreferredElected PreferredOutcome = iota
	// PreferredAlreadyLeads: it led already (Kafka's ELECTION_NOT_NEEDED).
	PreferredAlreadyLeads
	// PreferredNotAvailable: it is not alive and in sync, so it cannot
	// lead (Kafka's PREFERRED_LEADER_NOT_AVAILABLE).
	PreferredNotAvailable
)

// Preferred moves leadership to the partition's preferred replica (the
// first assigned one) when it is alive and in sync under the epoch the ISR
// records, as Kafka's preferred-leader election does. The ISR is kept;
// the leader epoch and the partition epoch are bumped. A partition whose
// preferred replica cannot lead is left as it is.
func Preferred(p Partition, live Live) (next Partition, outcome PreferredOutcome) {
	if len(p.Replicas) == 0 {
		return p, PreferredNotAvailable
	}
	preferred := p.Replicas[0]
	if p.Leader == preferred {
		return p, PreferredAlreadyLeads
	}
	if !slices.Contains(p.ISR, preferred) || !p.inSync(preferred, live) || !p.sameDir(preferred, live) {
		return p, PreferredNotAvailable
	}
	next = p.Clone()
	next.Leader = preferred
	next.LeaderEpoch++
	next.PartitionEpoch++
	return next, PreferredElected
}

// Imbalanced lists the brokers whose share of partitions led by another
// replica, among those they are the preferred replica of, is over ratio
// (Kafka's leader.imbalance.per.broker.percentage / 100): the brokers an
// automatic rebalance moves leadership back to. Only partitions whose
// preferred replica is alive count, as in Kafka.
func Imbalanced(parts []Partition, live Live, ratio float64) []int32 {
	preferredOf := map[int32]int{}
	notLeading := map[int32]int{}
	for _, p := range parts {
		if len(p.Replicas) == 0 {
			continue
		}
		id := p.Replicas[0]
		if _, alive := live(id); !alive {
			continue
		}
		preferredOf[id]++
		if p.Leader != id {
			notLeading[id]++
		}
	}
	var out []int32
	for id, n := range preferredOf {
		if float64(notLeading[id])/float64(n) > ratio {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
