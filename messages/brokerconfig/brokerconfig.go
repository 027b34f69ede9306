// Package brokerconfig is the broker settings that can be changed while
// brokers run (Kafka's dynamic broker configs): for one broker, or as the
// cluster's default for every broker without a value of its own. They
// are kept in the cluster's security record under Kafka's names, changed
// by the controller, and each broker applies them when its metadata
// brings them; a broker's own value wins over the cluster default, which
// wins over its flags. Every other setting is read at start.
package brokerconfig

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// ErrInvalid wraps every refused change.
var ErrInvalid = errors.New("invalid broker config")

// ClusterDefault is the broker id of the cluster's default values.
const ClusterDefault = -1

// The dynamic settings, under Kafka's names.
const (
	NumPartitions          = "num.partitions"
	DefaultReplication     = "default.replication.factor"
	AutoCreateTopics       = "auto.create.topics.enable"
	ConnectionsMaxReauthMs = "connections.max.reauth.ms"
	MaxConnections         = "max.connections"
	MaxConnectionsPerIP    = "max.connections.per.ip"
	// MaxConnectionsPerIPOverrides is ADDRESS:COUNT,... (IP addresses).
	MaxConnectionsPerIPOverrides = "max.connections.per.ip.overrides"
	// Defaults of topic configs (TopicSynonyms).
	LogRetentionMs        = "log.retention.ms"
	LogRetentionBytes     = "log.retention.bytes"
	LogSegmentBytes       = "log.segment.bytes"
	MessageMaxBytes       = "message.max.bytes"
	MinInsyncReplicas     = "min.insync.replicas"
	UncleanLeaderElection = "unclean.leader.election.enable"
)

// TopicSynonyms maps the dynamic broker settings that are defaults of
// topic configs (Kafka's log.* and friends) to the topic config each is
// the default of, for topics that set none of their own. Their ranges are
// the topic configs' (actors.ParseTopicConfig).
var TopicSynonyms = map[string]string{
	LogRetentionMs:        "retention.ms",
	LogRetentionBytes:     "retention.bytes",
	LogSegmentBytes:       "segment.bytes",
	MessageMaxBytes:       "max.message.bytes",
	MinInsyncReplicas:     "min.insync.replicas",
	UncleanLeaderElection: "unclean.leader.election.enable",
}

// TopicDefaults returns the topic config defaults v holds, under the
// topic configs' names.
func (v Values) TopicDefaults() map[string]string {
	out := map[string]string{}
	for name, key := range TopicSynonyms {
		if s, ok := v.Get(name); ok {
			out[key] = s
		}
	}
	return out
}

// dynamic checks a value of each dynamic setting.
var dynamic = map[string]func(string) error{
	NumPartitions:          intAtLeast(1),
	DefaultReplication:     intAtLeast(1),
	AutoCreateTopics:       isBool,
	ConnectionsMaxReauthMs: intAtLeast(0),
	MaxConnections:         intAtLeast(1),
	MaxConnectionsPerIP:    intAtLeast(1),
	MaxConnectionsPerIPOverrides: func(v string) error {
		_, err := ParseIPOverrides(v)
		return err
	},
	LogRetentionMs:        isInt,
	LogRetentionBytes:     isInt,
	LogSegmentBytes:       isInt,
	MessageMaxBytes:       isInt,
	MinInsyncReplicas:     isInt,
	UncleanLeaderElection: isBool,
}

// ParseIPOverrides reads max.connections.per.ip.overrides: a comma-separated
// list of ADDRESS:COUNT, the most connections from that IP address (as
// Kafka's, but IP addresses only: a name would need a lookup), keyed by the
// address in its canonical form. Empty: none.
func ParseIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndex(item, ":")
		if i < 0 {
			return nil, fmt.Errorf("%q: want ADDRESS:COUNT", item)
		}
		ip := net.ParseIP(strings.Trim(item[:i], "[]"))
		n, err := strconv.Atoi(item[i+1:])
		switch {
		case ip == nil:
			return nil, fmt.Errorf("%q: %q is not an IP address", item, item[:i])
		case err != nil || n < 0:
			return nil, fmt.Errorf("%q: want a count of 0 or more", item)
		}
		out[ip.String()] = n
	}
	return out, nil
}

// isInt checks a whole number; the ranges of topic config defaults are
// the topic configs' own, checked where they are parsed.
func isInt(v string) error {
	if _, err := strconv.ParseInt(v, 10, 64); err != nil {
		return fmt.Errorf("%q: want a whole number", v)
	}
	return nil
}

func intAtLeast(least int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < least {
			return fmt.Errorf("%q: want a whole number, at least %d", v, least)
		}
		return nil
	}
}

func isBool(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("%q: want true or false", v)
	}
	return nil
}

// IsDynamic reports whether name can be changed while brokers run.
func IsDynamic(name string) bool { _, ok := dynamic[name]; return ok }

// Names lists the dynamic settings, sorted.
func Names() []string {
	var out []string
	for n := range dynamic {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Change is one AlterConfigs or IncrementalAlterConfigs of a broker (or
// of the cluster default): values set, names deleted, or (Replace) the
// whole set of values replaced by Set.
type Change struct {
	BrokerID int32
	Set      map[string]string
	Delete   []string
	Replace  bool
}

// Apply returns rec with the change made; a setting that is not dynamic,
// or a bad value, refuses the whole change, saying why.
func Apply(rec *messages.SecurityRecord, ch Change) (*messages.SecurityRecord, error) {
	if ch.BrokerID < ClusterDefault {
		return nil, fmt.Errorf("%w: broker id %d: want a broker's id, or the cluster default", ErrInvalid, ch.BrokerID)
	}
	for _, name := range append(slices.Sorted(maps.Keys(ch.Set)), ch.Delete...) {
		if !IsDynamic(name) {
			return nil, fmt.Errorf("%w: %s cannot be changed while brokers run (read at start: set it with the broker's flags or --config); the dynamic ones are %s",
				ErrInvalid, name, strings.Join(Names(), ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ch.Set)) {
		if err := dynamic[name](ch.Set[name]); err != nil {
			return nil, fmt.Errorf("%w: %s %w", ErrInvalid, name, err)
		}
	}
	next := &messages.SecurityRecord{}
	if rec != nil {
		next = proto.CloneOf(rec)
	}
	i := slices.IndexFunc(next.BrokerConfigs, func(o *messages.BrokerConfigOverride) bool { return o.BrokerId == ch.BrokerID })
	values := map[string]string{}
	if i >= 0 && !ch.Replace {
		for _, v := range next.BrokerConfigs[i].Values {
			values[v.Name] = v.Value
		}
	}
	for _, name := range ch.Delete {
		delete(values, name)
	}
	for name, v := range ch.Set {
		values[name] = v
	}
	o := &messages.BrokerConfigOverride{BrokerId: ch.BrokerID}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		o.Values = append(o.Values, &messages.ConfigValue{Name: name, Value: values[name]})
	}
	switch {
	case i >= 0 && len(o.Values) == 0:
		next.BrokerConfigs = slices.Delete(next.BrokerConfigs, i, i+1)
	case i >= 0:
		next.BrokerConfigs[i] = o
	case len(o.Values) > 0:
		next.BrokerConfigs = append(next.BrokerConfigs, o)
		slices.SortFunc(next.BrokerConfigs, func(a, b *messages.BrokerConfigOverride) int { return int(a.BrokerId - b.BrokerId) })
	}
	return next, nil
}

// Values is the dynamic settings in force for one broker: its own and
// the cluster default ones.
type Values struct {
	Broker, Cluster map[string]string
}

// For returns the dynamic settings of broker id in rec.
func For(rec *messages.SecurityRecord, id int32) Values {
	v := Values{Broker: map[string]string{}, Cluster: map[string]string{}}
	for _, o := range rec.GetBrokerConfigs() {
		var into map[string]string
		switch o.BrokerId {
		case id:
			into = v.Broker
		case ClusterDefault:
			into = v.Cluster
		default:
			continue
		}
		for _, kv := range o.Values {
			into[kv.Name] = kv.Value
		}
	}
	return v
}

// Get returns the value in force of name (the broker's, else the
// cluster default) and whether there is one.
func (v Values) Get(name string) (string, bool) {
	if s, ok := v.Broker[name]; ok {
		return s, true
	}
	s, ok := v.Cluster[name]
	return s, ok
}

// Int returns name as a number, or def when it has no dynamic value.
func (v Values) Int(name string, def int) int {
	if s, ok := v.Get(name); ok {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return def
}

// Bool returns name as a boolean, or def when it has no dynamic value.
func (v Values) Bool(name string, def bool) bool {
	if s, ok := v.Get(name); ok {
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	}
	return def
}
