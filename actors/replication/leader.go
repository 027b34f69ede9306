package replication

import (
	"maps"
	"slices"
	"time"
)

// LeaderConfig is what a leader needs to know about its partition.
type LeaderConfig struct {
	// ReplicaID is this broker's id.
	ReplicaID int32
	// Epoch is the leader epoch this leadership runs under.
	Epoch int32
	// PartitionEpoch of the state the leadership started from.
	PartitionEpoch int32
	// Replicas is the assigned replica set (AR), leader included.
	Replicas []int32
	// ISR is the committed in-sync set, leader included.
	ISR []int32
	// ISREpochs is the broker epoch each ISR member was in sync under
	// (missing: not known).
	ISREpochs map[int32]int64
	// MinISR is min.insync.replicas: below it the HW does not advance and
	// acks=all produce requests are refused.
	MinISR int
	// LagTimeMax is replica.lag.time.max: a follower that has not caught up
	// to the leader's LEO for longer leaves the ISR.
	LagTimeMax time.Duration
	// HighWatermark the leader starts from (its checkpoint, at most its LEO).
	HighWatermark int64
	// ProposalBackoff spaces ISR proposals after the controller refused
	// one (or did not answer).
	ProposalBackoff time.Duration
}

// followerProgress is the leader's record of one follower replica.
type followerProgress struct {
	leo int64
	// lastCaughtUp is the last time the follower's LEO reached the leader's
	// LEO as it was at that follower's previous fetch (Kafka's rule).
	lastCaughtUp time.Time
	// lastFetch and leaderLEOAtLastFetch feed that rule.
	lastFetch            time.Time
	leaderLEOAtLastFetch int64
	known                bool  // has fetched at least once in this leadership
	epoch                int64 // broker epoch of its last fetch (0: not known)
}

// Leader tracks followers, the ISR and the high watermark of one partition
// leader. It is not safe for concurrent use.
type Leader struct {
	cfg              LeaderConfig
	leo              int64
	hw               int64
	epochStartOffset int64
	isr              []int32
	isrEpochs        map[int32]int64
	partitionEpoch   int32
	// proposed is an ISR change sent to the controller and not yet
	// committed; nil when none is in flight.
	proposed []int32
	// proposeAfter holds proposals back after a refusal.
	proposeAfter time.Time
	followers    map[int32]*followerProgress
}

// NewLeader starts a leadership at the given LEO. Followers count as caught
// up at now, so an ISR member is only dropped after a full lag period.
func NewLeader(cfg LeaderConfig, leo int64, now time.Time) *Leader {
	l := &Leader{
		cfg:              cfg,
		leo:              leo,
		hw:               min(max(cfg.HighWatermark, 0), leo),
		epochStartOffset: leo,
		isr:              slices.Clone(cfg.ISR),
		isrEpochs:        maps.Clone(cfg.ISREpochs),
		partitionEpoch:   cfg.PartitionEpoch,
		followers:        map[int32]*followerProgress{},
	}
	for _, id := range cfg.Replicas {
		if id != cfg.ReplicaID {
			l.followers[id] = &followerProgress{leo: -1, lastCaughtUp: now, lastFetch: now}
		}
	}
	if !slices.Contains(l.isr, cfg.ReplicaID) {
		l.isr = append(l.isr, cfg.ReplicaID)
	}
	l.advanceHW()
	return l
}

// Epoch is the leader epoch.
func (l *Leader) Epoch() int32 { return l.cfg.Epoch }

// LEO is the leader's log end offset.
func (l *Leader) LEO() int64 { return l.leo }

// HighWatermark is the offset below which every in-sync replica has the data.
func (l *Leader) HighWatermark() int64 { return l.hw }

// ISR is the committed in-sync replica set.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// PartitionEpoch of the committed state the leader works from.
func (l *Leader) PartitionEpoch() int32 { return l.partitionEpoch }

// EpochStartOffset is the leader's LEO when this leadership began.
func (l *Leader) EpochStartOffset() int64 { return l.epochStartOffset }

// FollowerLEO returns what the leader knows of a follower's LEO (-1: unknown).
func (l *Leader) FollowerLEO(id int32) int64 {
	if f, ok := l.followers[id]; ok {
		return f.leo
	}
	return -1
}

// CanAcceptAcksAll reports whether an acks=all request may be appended:
// the committed ISR has at least MinISR members.
func (l *Leader) CanAcceptAcksAll() bool { return len(l.isr) >= l.cfg.MinISR }

// Appended records that the leader's own log now ends at leo.
// It returns true when the high watermark moved.
func (l *Leader) Appended(leo int64) bool {
	l.leo = leo
	return l.advanceHW()
}

// FollowerFetched records a follower's fetch from fetchOffset under broker
// epoch brokerEpoch (0: not known), which acknowledges that the follower
// holds everything below fetchOffset. It returns whether the HW moved and
// the ISR to propose (nil for none):
//   - an in-sync follower that fetches below the HW, or under another
//     broker epoch than the ISR records for it, has lost data (it
//     restarted with an empty or shorter log): the ISR without it, at once;
//   - a follower outside the ISR that has caught up: the ISR with it.
func (l *Leader) FollowerFetched(id int32, fetchOffset int64, brokerEpoch int64, now time.Time) (hwMoved bool, propose []int32) {
	f, ok := l.followers[id]
	if !ok {
		return false, nil
	}
	if brokerEpoch != 0 && brokerEpoch != f.epoch {
		if f.epoch != 0 {
			// A new run of the follower's broker: what the earlier run
			// acknowledged says nothing about this one's log.
			f.known, f.leo = false, -1
		}
		f.epoch = brokerEpoch
	}
	switch {
	case fetchOffset >= l.leo:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case f.known && fetchOffset >= f.leaderLEOAtLastFetch:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetch)
	}
	f.leo = fetchOffset
	f.known = true
	f.lastFetch = now
	f.leaderLEOAtLastFetch = l.leo
	hwMoved = l.advanceHW()
	if l.proposed != nil || now.Before(l.proposeAfter) {
		return hwMoved, nil
	}
	inISR := slices.Contains(l.isr, id)
	recorded := l.isrEpochs[id]
	switch {
	case inISR && (fetchOffset < l.hw || (recorded != 0 && brokerEpoch != 0 && recorded != brokerEpoch)):
		propose = without(l.isr, id)
	case !inISR && l.caughtUpForISR(f):
		propose = sortedWith(l.isr, id)
	}
	l.proposed = propose
	return hwMoved, propose
}

// FollowerEpoch is the broker epoch follower id last fetched under (0: not known).
func (l *Leader) FollowerEpoch(id int32) int64 {
	if f, ok := l.followers[id]; ok {
		return f.epoch
	}
	return 0
}

// ISREpoch is the broker epoch the committed ISR records for member id.
func (l *Leader) ISREpoch(id int32) int64 { return l.isrEpochs[id] }

// ProposalEpochs are the broker epochs an ISR proposal records for its
// members: this leader's own (selfEpoch), a follower's from its latest
// fetch, else what the committed ISR records; a member with none known is
// left out. The controller takes a member only under the epoch recorded,
// so a broker restarted since (a new epoch) cannot pass for its earlier
// run.
func (l *Leader) ProposalEpochs(isr []int32, selfEpoch int64) map[int32]int64 {
	epochs := make(map[int32]int64, len(isr))
	for _, id := range isr {
		e := l.FollowerEpoch(id)
		switch {
		case id == l.cfg.ReplicaID:
			e = selfEpoch
		case e == 0:
			e = l.ISREpoch(id)
		}
		if e != 0 {
			epochs[id] = e
		}
	}
	return epochs
}

// caughtUpForISR is Kafka's rule for rejoining: the follower has everything
// below the HW and has reached the start of the current leader epoch.
func (l *Leader) caughtUpForISR(f *followerProgress) bool {
	return f.leo >= l.hw && f.leo >= l.epochStartOffset
}

// Tick checks follower lag at now and returns the ISR to propose when some
// in-sync follower has lagged longer than LagTimeMax (nil otherwise).
func (l *Leader) Tick(now time.Time) []int32 {
	if l.proposed != nil || now.Before(l.proposeAfter) {
		return nil
	}
	var keep []int32
	dropped := false
	for _, id := range l.isr {
		if f, ok := l.followers[id]; ok && now.Sub(f.lastCaughtUp) > l.cfg.LagTimeMax {
			dropped = true
			continue
		}
		keep = append(keep, id)
	}
	if !dropped {
		return nil
	}
	l.proposed = keep
	return keep
}

// ProposalRefused forgets the proposal of isr in flight, which the
// controller refused or did not answer, and holds the next one back for
// the proposal backoff from now: a Tick or fetch after that proposes
// again.
func (l *Leader) ProposalRefused(isr []int32, now time.Time) {
	if slices.Equal(l.proposed, isr) {
		l.proposed = nil
	}
	l.proposeAfter = now.Add(l.cfg.ProposalBackoff)
}

// Proposed returns the ISR change in flight, or nil.
func (l *Leader) Proposed() []int32 { return slices.Clone(l.proposed) }

// ISRCommitted applies an ISR (and its members' broker epochs) the
// controller committed at partitionEpoch. It returns whether the HW moved.
func (l *Leader) ISRCommitted(isr []int32, epochs map[int32]int64, partitionEpoch int32) bool {
	if partitionEpoch < l.partitionEpoch {
		return false
	}
	l.isr = slices.Clone(isr)
	l.isrEpochs = maps.Clone(epochs)
	l.partitionEpoch = partitionEpoch
	l.proposed = nil
	return l.advanceHW()
}

// ReplicasChanged applies a replica set the controller changed under this
// leadership (a reassignment adding or removing replicas): new followers
// are tracked as caught up at now, like those of a new leadership, and
// removed ones are forgotten.
func (l *Leader) ReplicasChanged(replicas []int32, now time.Time) {
	l.cfg.Replicas = slices.Clone(replicas)
	for id := range l.followers {
		if !slices.Contains(replicas, id) {
			delete(l.followers, id)
		}
	}
	for _, id := range replicas {
		if _, ok := l.followers[id]; !ok && id != l.cfg.ReplicaID {
			l.followers[id] = &followerProgress{leo: -1, lastCaughtUp: now, lastFetch: now}
		}
	}
}

// SetMinISR applies a changed min.insync.replicas and reports whether the
// HW moved (a lower minimum can release it).
func (l *Leader) SetMinISR(n int) bool {
	l.cfg.MinISR = n
	return l.advanceHW()
}

// advanceHW recomputes the HW as the minimum LEO over the maximal ISR (the
// committed ISR plus any member being added), and never moves it back.
// With fewer committed in-sync replicas than MinISR it stays where it is.
func (l *Leader) advanceHW() bool {
	if len(l.isr) < l.cfg.MinISR {
		return false
	}
	hw := l.leo
	for _, id := range l.maximalISR() {
		if id == l.cfg.ReplicaID {
			continue
		}
		f, ok := l.followers[id]
		if !ok || f.leo < 0 {
			// An in-sync follower that has not fetched yet in this leadership
			// might lack anything above the current HW.
			return false
		}
		hw = min(hw, f.leo)
	}
	if hw > l.hw {
		l.hw = hw
		return true
	}
	return false
}

// maximalISR is the committed ISR united with a proposal in flight, so that
// the HW is safe whichever way the controller decides (KIP-497).
func (l *Leader) maximalISR() []int32 {
	out := slices.Clone(l.isr)
	for _, id := range l.proposed {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func without(set []int32, id int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, x := range set {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func sortedWith(set []int32, id int32) []int32 {
	out := append(slices.Clone(set), id)
	slices.Sort(out)
	return slices.Compact(out)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Admission is a leader's verdict on a follower's request.
type Admission int

const (
	Admitted Admission = iota
	// StaleEpoch: the follower is behind the leader epoch (fenced).
	StaleEpoch
	// UnknownEpoch: the follower is at an epoch the leader does not have yet.
	UnknownEpoch
	// NotAFollower: the sender is the leader itself or not in the replica set.
	NotAFollower
)

// AdmitFollower fences a follower's request (a fetch or an epoch query) by
// leader epoch and replica set: only the replicas other than the leader,
// at the leader's own epoch, are served.
func AdmitFollower(leaderEpoch, requestEpoch, leaderID, replica int32, replicas []int32) Admission {
	switch {
	case requestEpoch < leaderEpoch:
		return StaleEpoch
	case requestEpoch > leaderEpoch:
		return UnknownEpoch
	case replica == leaderID || !slices.Contains(replicas, replica):
		return NotAFollower
	}
	return Admitted
}
