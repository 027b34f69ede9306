package consumergroup

import (
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"

	"github.com/sluicemq/sluice/actors/groups"
)

// MaxRegexBytes bounds a subscription's regular expression.
const MaxRegexBytes = 4096

// Group is one consumer group. It is not safe for concurrent use: one
// actor owns it.
type Group struct {
	cfg Config
	// epoch moves with everything the assignment depends on;
	// assignmentEpoch is the epoch target was computed at (always epoch
	// once a call returns: targets are computed at once).
	epoch, assignmentEpoch int32
	assignor               string
	members                map[string]*member
	target                 map[string]set
	// owner is who holds each partition, assigned or still revoking.
	owner   map[tp]string
	statics map[string]string // instance id -> member id
	// counts are the partitions of the subscribed topics the target was
	// computed from; Tick bumps the epoch when they move.
	counts map[string]int32
	// regexes are the subscriptions' regular expressions, compiled, with
	// the topics each matched for its principal when last refreshed (at
	// regexAt).
	regexes map[regexKey]*regexp.Regexp
	matches map[regexKey][]string
	regexAt time.Time
	// regexVersion and countsVersion are the catalog versions (see
	// Catalog.Version) the matches and counts were last taken at.
	regexVersion, countsVersion uint64
	// changes counts changes to what Snapshot holds (see Changes).
	changes uint64
}

// regexKey is a regular expression as matched for a principal: the
// topics it matches are those the principal may describe.
type regexKey struct{ principal, regex string }

type member struct {
	id, instanceID, rackID, clientID, clientHost string
	principal                                    string
	epoch, previousEpoch                         int32
	state                                        MemberState
	topics                                       []string // sorted
	regex                                        string
	assignor                                     string // as asked ("": the default)
	rebalanceTimeout                             time.Duration
	// assigned is what the member holds and keeps; revoking what it holds
	// and must give up. since is, for each assigned partition, the epoch
	// at which the member got it (see CommitCheck).
	assigned, revoking set
	since              map[tp]int32
	lastSeen           time.Time
	revokeBy           time.Time
	// leaving: a static member that left with epoch -2; its place and
	// partitions wait for its instance to return until its session ends.
	leaving bool
}

// New returns an empty group at epoch 0. cfg should pass Validate.
func New(cfg Config) *Group {
	return &Group{cfg: cfg, members: map[string]*member{}, target: map[string]set{}, owner: map[tp]string{},
		statics: map[string]string{}, counts: map[string]int32{}, regexes: map[regexKey]*regexp.Regexp{},
		matches: map[regexKey][]string{}}
}

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// Has reports whether id is a member.
func (g *Group) Has(id string) bool { _, ok := g.members[id]; return ok }

// Len is the number of members.
func (g *Group) Len() int { return len(g.members) }

// MemberIDs lists the members, sorted.
func (g *Group) MemberIDs() []string { return slices.Sorted(maps.Keys(g.members)) }

// Heartbeat handles one ConsumerGroupHeartbeat: a join (epoch 0), a leave
// (-1, -2) or a member's heartbeat at its epoch, which also reports what
// it owns and moves it towards its target.
func (g *Group) Heartbeat(h Heartbeat, now time.Time, cat Catalog) Reply {
	if h.MemberID == "" && h.MemberEpoch == 0 && g.cfg.NewMemberID != nil {
		h.MemberID = g.cfg.NewMemberID()
	}
	if code, text := g.check(h); code != None {
		return g.refuse(h, code, text)
	}
	if h.MemberEpoch < 0 {
		return g.leave(h, now, cat)
	}
	m, joined, code, text := g.memberFor(h)
	if code != None {
		return g.refuse(h, code, text)
	}
	epoch, held := m.epoch, maps.Clone(m.assigned)
	m.lastSeen = now
	if joined {
		g.changes++
	}
	if g.subscribe(m, h, now, cat) || joined {
		g.bump(cat)
	}
	before := m.progress()
	g.reconcile(m, h, now)
	if m.progress() != before {
		g.changes++
	}
	r := Reply{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: g.cfg.HeartbeatInterval}
	if h.full() || m.epoch != epoch || !m.assigned.equal(held) {
		r.Assignment, r.HasAssignment = m.assigned.list(), true
	}
	return r
}

func (g *Group) refuse(h Heartbeat, code Code, text string) Reply {
	return Reply{Code: code, Message: text, MemberID: h.MemberID, MemberEpoch: h.MemberEpoch, HeartbeatInterval: g.cfg.HeartbeatInterval}
}

// check applies the rules of the request itself, as Kafka does before it
// looks at the group.
func (g *Group) check(h Heartbeat) (Code, string) {
	switch {
	case h.MemberID == "":
		return InvalidRequest, "MemberId can't be empty"
	case h.MemberEpoch < -2:
		return InvalidRequest, fmt.Sprintf("MemberEpoch %d is invalid", h.MemberEpoch)
	case h.MemberEpoch == 0 && h.RebalanceTimeout < 0:
		return InvalidRequest, "RebalanceTimeoutMs must be provided in the first request"
	case h.MemberEpoch == 0 && !h.TopicsSet && !h.RegexSet:
		return InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in the first request"
	case h.MemberEpoch == 0 && len(h.Owned) > 0:
		return InvalidRequest, "TopicPartitions must be empty when (re-)joining"
	case h.Assignor != "" && assignors[h.Assignor] == nil:
		return UnsupportedAssignor, fmt.Sprintf("server assignor %q: this coordinator has %q and %q", h.Assignor, Uniform, Range)
	}
	n := len(h.Regex) + len(h.ClientID) + len(h.InstanceID) + len(h.RackID)
	for _, t := range h.Topics {
		n += len(t)
	}
	if n > groups.MaxMemberMetadataBytes {
		return InvalidRequest, fmt.Sprintf("the subscription takes %d bytes, at most %d", n, groups.MaxMemberMetadataBytes)
	}
	if h.RegexSet && h.Regex != "" {
		if len(h.Regex) > MaxRegexBytes {
			return InvalidRegularExpression, fmt.Sprintf("the regular expression has %d bytes, at most %d", len(h.Regex), MaxRegexBytes)
		}
		if _, err := compile(h.Regex); err != nil {
			return InvalidRegularExpression, err.Error()
		}
	}
	return None, ""
}

// compile makes re match whole topic names, as Kafka's (RE2J) matches().
func compile(re string) (*regexp.Regexp, error) {
	return regexp.Compile(anchored(re))
}

// anchored makes re match whole names only.
func anchored(re string) string { return `^(?:` + re + `)$` }

// RegexBytes estimates what a member's regular expression holds of the
// broker's memory for principal: its compiled program (measured at some
// 1.5 KiB and 40 to 210 bytes an instruction; counted as 2 KiB and 256)
// and the names of the topics it matches (16 bytes each). Its text can
// be far smaller ("[a-z]{1000}" compiles to 1,006 instructions), so this
// is what the group metadata budget counts. An expression that does not
// compile, or is longer than MaxRegexBytes, costs nothing (Heartbeat
// refuses it) and is not compiled here.
func RegexBytes(regex, principal string, cat Catalog) int64 {
	if regex == "" || len(regex) > MaxRegexBytes {
		return 0 // nothing, or refused before it is compiled
	}
	parsed, err := syntax.Parse(anchored(regex), syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return 0
	}
	re, err := compile(regex)
	if err != nil {
		return 0
	}
	return 2048 + 256*int64(len(prog.Inst)) + 16*int64(len(matching(re, principal, cat)))
}

// Subscription returns what member id subscribes with: topic names and a
// regular expression ("" for none, or no such member).
func (g *Group) Subscription(id string) (topics []string, regex string) {
	if m := g.members[id]; m != nil {
		return slices.Clone(m.topics), m.regex
	}
	return nil, ""
}

// memberFor finds or makes (joined) the member a heartbeat is from.
func (g *Group) memberFor(h Heartbeat) (m *member, joined bool, code Code, text string) {
	m = g.members[h.MemberID]
	if m != nil && h.InstanceID != "" && m.instanceID != h.InstanceID {
		return nil, false, FencedInstanceID, fmt.Sprintf("member %q holds instance id %q, not %q", m.id, m.instanceID, h.InstanceID)
	}
	if h.MemberEpoch != 0 {
		if m == nil {
			return nil, false, UnknownMemberID, fmt.Sprintf("member %q is not in the group", h.MemberID)
		}
		if code, text := m.checkEpoch(h); code != None {
			return nil, false, code, text
		}
		return m, false, None, ""
	}
	if m != nil { // a rejoin: the member holds nothing now
		g.changes++
		g.release(m, m.assigned)
		g.release(m, m.revoking)
		m.assigned, m.revoking, m.state = set{}, set{}, Stable
		m.previousEpoch, m.epoch = m.epoch, 0
		m.leaving = false
		return m, false, None, ""
	}
	if h.InstanceID != "" {
		if old := g.members[g.statics[h.InstanceID]]; old != nil {
			if !old.leaving {
				return nil, false, UnreleasedInstanceID, fmt.Sprintf("instance id %q is held by member %q, which has not left", h.InstanceID, old.id)
			}
			return g.replace(old, h.MemberID), false, None, ""
		}
	}
	if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize {
		return nil, false, GroupMaxSizeReached, fmt.Sprintf("the group has %d members, its maximum", len(g.members))
	}
	m = &member{id: h.MemberID, instanceID: h.InstanceID, assigned: set{}, revoking: set{}, since: map[tp]int32{}}
	g.members[m.id] = m
	if m.instanceID != "" {
		g.statics[m.instanceID] = m.id
	}
	return m, true, None, ""
}

// replace moves a static member that left to the new member id of its
// returning instance, with everything it held: no rebalance.
func (g *Group) replace(old *member, id string) *member {
	g.changes++
	delete(g.members, old.id)
	g.target[id] = g.target[old.id]
	delete(g.target, old.id)
	for x, o := range g.owner {
		if o == old.id {
			g.owner[x] = id
		}
	}
	old.id, old.leaving = id, false
	g.members[id] = old
	g.statics[old.instanceID] = id
	return old
}

// checkEpoch accepts a heartbeat at the member's epoch, or at its previous
// epoch from a member that missed the answer that moved it (and so owns
// no more than it was given).
func (m *member) checkEpoch(h Heartbeat) (Code, string) {
	switch {
	case h.MemberEpoch == m.epoch:
		return None, ""
	case h.MemberEpoch < m.epoch && h.MemberEpoch == m.previousEpoch && h.OwnedSet && setOf(h.Owned).subsetOf(m.assigned):
		return None, ""
	}
	return FencedMemberEpoch, fmt.Sprintf("member %q is at epoch %d, not %d", m.id, m.epoch, h.MemberEpoch)
}

// subscribe applies what a heartbeat changes of the member, reporting
// whether its subscription changed.
func (g *Group) subscribe(m *member, h Heartbeat, now time.Time, cat Catalog) bool {
	kept := [4]any{m.rebalanceTimeout, m.rackID, m.clientID, m.clientHost}
	if h.RebalanceTimeout >= 0 {
		m.rebalanceTimeout = h.RebalanceTimeout
	}
	if h.RackID != "" {
		m.rackID = h.RackID
	}
	if h.ClientID != "" {
		m.clientID = h.ClientID
	}
	if h.ClientHost != "" {
		m.clientHost = h.ClientHost
	}
	if kept != [4]any{m.rebalanceTimeout, m.rackID, m.clientID, m.clientHost} {
		g.changes++
	}
	changed := false
	if h.TopicsSet {
		topics := slices.Compact(slices.Sorted(slices.Values(h.Topics)))
		changed = !slices.Equal(topics, m.topics)
		m.topics = topics
	}
	regex := m.regex
	if h.RegexSet {
		regex = h.Regex
	}
	if regex != m.regex || h.Principal != m.principal {
		// Another principal may describe other topics: its expression
		// matches again.
		changed = changed || regex != m.regex || regex != ""
		if h.Principal != m.principal {
			g.changes++
		}
		m.regex, m.principal = regex, h.Principal
		if k := m.regexKey(); m.regex != "" && g.regexes[k] == nil {
			re, _ := compile(m.regex) // checked
			g.regexes[k] = re
			g.matches[k] = matching(re, k.principal, cat)
			if g.regexAt.IsZero() {
				g.regexAt = now
			}
		}
	}
	if h.Assignor != "" && h.Assignor != m.assignor {
		changed = true
		m.assignor = h.Assignor
	}
	return changed
}

func (m *member) regexKey() regexKey { return regexKey{m.principal, m.regex} }

// matching lists the topics re matches that principal may describe.
func matching(re *regexp.Regexp, principal string, cat Catalog) []string {
	var out []string
	if cat.Topics == nil {
		return nil
	}
	for _, t := range cat.Topics() {
		if re.MatchString(t) && (cat.Describable == nil || cat.Describable(principal, t)) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// leave handles epoch -1 (the member leaves) and -2 (a static member
// leaves its place open until its session timeout). The member is found
// by its id or, when the id is unknown, by its instance id; a -2 need not
// name the instance (franz-go's does not).
func (g *Group) leave(h Heartbeat, now time.Time, cat Catalog) Reply {
	m := g.members[h.MemberID]
	if m == nil && h.InstanceID != "" {
		m = g.members[g.statics[h.InstanceID]]
	}
	switch {
	case m == nil:
		return g.refuse(h, UnknownMemberID, fmt.Sprintf("member %q is not in the group", h.MemberID))
	case h.InstanceID != "" && m.instanceID != h.InstanceID, h.InstanceID != "" && m.id != h.MemberID:
		return g.refuse(h, FencedInstanceID, fmt.Sprintf("instance id %q is held by member %q", h.InstanceID, m.id))
	}
	if h.MemberEpoch == -2 && m.instanceID != "" {
		m.leaving, m.lastSeen = true, now
		g.changes++
	} else { // -1, or -2 from a member without an instance id: gone
		g.remove(m)
		g.bump(cat)
	}
	return Reply{MemberID: h.MemberID, MemberEpoch: h.MemberEpoch, HeartbeatInterval: g.cfg.HeartbeatInterval}
}

func (g *Group) remove(m *member) {
	g.changes++
	g.release(m, m.assigned)
	g.release(m, m.revoking)
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.instanceID != "" && g.statics[m.instanceID] == m.id {
		delete(g.statics, m.instanceID)
	}
}

// release frees partitions m held.
func (g *Group) release(m *member, s set) {
	for x := range s {
		if g.owner[x] == m.id {
			delete(g.owner, x)
		}
		delete(m.since, x)
	}
}

// Tick removes members past their session timeout or, while revoking,
// past their rebalance timeout; matches regular expressions again when
// due; and moves the epoch when what the target depends on moved.
func (g *Group) Tick(now time.Time, cat Catalog) Outcome {
	var out Outcome
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		if now.Sub(m.lastSeen) > g.cfg.SessionTimeout || (m.state == UnrevokedPartitions && now.After(m.revokeBy)) {
			g.remove(m)
			out.Removed = append(out.Removed, id)
		}
	}
	moved := len(out.Removed) > 0
	// Matching and counting cost a pass over the cluster's topics for
	// each member: done only when the catalog may have changed.
	version, versioned := cat.version()
	if len(g.regexes) > 0 && now.Sub(g.regexAt) >= g.cfg.RegexRefresh && (!versioned || version != g.regexVersion) {
		g.regexAt, g.regexVersion = now, version
		for k, re := range g.regexes {
			if m := matching(re, k.principal, cat); !slices.Equal(m, g.matches[k]) {
				g.matches[k], moved = m, true
			}
		}
	}
	if !moved && (!versioned || version != g.countsVersion) {
		g.countsVersion = version
		moved = !maps.Equal(g.subscribedCounts(cat), g.counts)
	}
	if moved {
		g.bump(cat)
		out.EpochBumped = true
	}
	return out
}

// subscribed lists the topics m subscribes to, by name or expression.
func (g *Group) subscribed(m *member) []string {
	if m.regex == "" {
		return m.topics
	}
	return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(m.topics), g.matches[m.regexKey()]...))))
}

// subscribedCounts is the partition count of each existing topic some
// member subscribes to.
func (g *Group) subscribedCounts(cat Catalog) map[string]int32 {
	counts := map[string]int32{}
	for _, m := range g.members {
		for _, t := range g.subscribed(m) {
			if _, ok := counts[t]; ok || cat.Partitions == nil {
				continue
			}
			if n := cat.Partitions(t); n > 0 {
				counts[t] = n
			}
		}
	}
	return counts
}

// bump moves the group epoch and computes the new target assignment with
// the assignor most members ask for (ties: the default, then by name).
func (g *Group) bump(cat Catalog) {
	g.epoch++
	g.changes++
	votes := map[string]int{}
	for _, m := range g.members {
		votes[cmpOr(m.assignor, g.cfg.DefaultAssignor)]++
	}
	g.assignor = g.cfg.DefaultAssignor
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if votes[name] > votes[g.assignor] {
			g.assignor = name
		}
	}
	g.counts = g.subscribedCounts(cat)
	g.countsVersion, _ = cat.version()
	subs := make([]groups.Subscription, 0, len(g.members))
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		subs = append(subs, groups.Subscription{MemberID: id, Topics: g.subscribed(m), Previous: g.target[id].list()})
	}
	target := map[string]set{}
	for id, a := range assignors[g.assignor](subs, g.counts) {
		target[id] = setOf(a)
	}
	g.target, g.assignmentEpoch = target, g.epoch
	used := map[regexKey]bool{}
	for _, m := range g.members {
		used[m.regexKey()] = true
	}
	for k := range g.regexes { // forget expressions no member uses
		if !used[k] {
			delete(g.regexes, k)
			delete(g.matches, k)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// progress is what reconciling can change of a member (partitions only
// ever move between its sets along with one of these).
func (m *member) progress() [4]int32 {
	return [4]int32{m.epoch, int32(m.state), int32(len(m.assigned)), int32(len(m.revoking))}
}

// reconcile moves m towards its target as far as the rules allow.
func (g *Group) reconcile(m *member, h Heartbeat, now time.Time) {
	switch m.state {
	case UnrevokedPartitions:
		if !h.OwnedSet || setOf(h.Owned).intersects(m.revoking) {
			return // still revoking
		}
		g.release(m, m.revoking)
		m.revoking = set{}
		g.advance(m, now)
	case UnreleasedPartitions:
		g.advance(m, now)
	case Stable:
		if m.epoch != g.assignmentEpoch {
			g.advance(m, now)
		}
	}
}

// advance is one step towards the target: revoke first (at the member's
// epoch), else take what is free and move to the target's epoch.
func (g *Group) advance(m *member, now time.Time) {
	target := g.target[m.id]
	revoke := m.assigned.minus(target)
	if len(revoke) > 0 {
		for x := range revoke {
			delete(m.assigned, x)
		}
		m.revoking = revoke
		m.state = UnrevokedPartitions
		timeout := m.rebalanceTimeout
		if timeout <= 0 {
			timeout = g.cfg.SessionTimeout
		}
		m.revokeBy = now.Add(timeout)
		return
	}
	m.state = Stable
	for x := range target.minus(m.assigned) {
		if o, held := g.owner[x]; held && o != m.id {
			m.state = UnreleasedPartitions
			continue
		}
		m.assigned[x] = struct{}{}
		g.owner[x] = m.id
		m.since[x] = g.assignmentEpoch
	}
	if m.epoch != g.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, g.assignmentEpoch
	}
}

// CommitCheck checks an offset commit of partitions by a member at an
// epoch: at the member's epoch anything goes (as Kafka); at an earlier
// one, only partitions the member has held since then. An admin commit
// (no member, epoch < 0) needs a group without members.
func (g *Group) CommitCheck(memberID string, epoch int32, partitions []groups.TopicPartitions) (Code, string) {
	if memberID == "" && epoch < 0 {
		if len(g.members) > 0 {
			return NonEmptyGroup, fmt.Sprintf("the group has %d members", len(g.members))
		}
		return None, ""
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return UnknownMemberID, fmt.Sprintf("member %q is not in the group", memberID)
	case epoch == m.epoch:
		return None, ""
	case epoch > m.epoch:
		return StaleMemberEpoch, fmt.Sprintf("member %q is at epoch %d, not %d", memberID, m.epoch, epoch)
	}
	for x := range setOf(partitions) {
		since, held := m.since[x]
		if !held || since > epoch {
			return StaleMemberEpoch, fmt.Sprintf("member %q did not hold %s-%d at epoch %d (it is at %d)", memberID, x.topic, x.p, epoch, m.epoch)
		}
	}
	return None, ""
}

// FetchCheck checks an offset fetch by a member at an epoch: only the
// member's own epoch is current (as Kafka), so a member whose assignment
// moved on heartbeats before it reads offsets.
func (g *Group) FetchCheck(memberID string, epoch int32) (Code, string) {
	m := g.members[memberID]
	switch {
	case m == nil:
		return UnknownMemberID, fmt.Sprintf("member %q is not in the group", memberID)
	case epoch != m.epoch:
		return StaleMemberEpoch, fmt.Sprintf("member %q is at epoch %d, not %d", memberID, m.epoch, epoch)
	}
	return None, ""
}

// State is Kafka's name of the group's state: Empty without members,
// Reconciling while a member has not reached its target, else Stable.
func (g *Group) State() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	for _, m := range g.members {
		if m.state != Stable || m.epoch != g.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// Describe shows the group.
func (g *Group) Describe() Description {
	d := Description{State: g.State(), Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Assignor: g.assignor}
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		held := maps.Clone(m.assigned)
		maps.Copy(held, m.revoking)
		d.Members = append(d.Members, MemberDescription{MemberID: id, InstanceID: m.instanceID, RackID: m.rackID,
			ClientID: m.clientID, ClientHost: m.clientHost, MemberEpoch: m.epoch, State: m.state, Topics: slices.Clone(m.topics),
			Regex: m.regex, Assignor: cmpOr(m.assignor, g.cfg.DefaultAssignor), Assignment: held.list(), Target: g.target[id].list()})
	}
	return d
}
