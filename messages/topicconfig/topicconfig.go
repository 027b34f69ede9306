// Package topicconfig is the catalogue of Kafka's topic configurations:
// each name with its type, Kafka's default, the broker setting it falls
// back to, a line of documentation, how its values are checked, and
// whether Sluice applies it. Both doors accept every name Kafka defines:
// the ones Sluice applies take effect; the ones it has nothing to do for
// (Sluice fsyncs every write, so flush.* never flush later) are kept and
// shown; a value whose meaning Sluice does not implement yet
// (cleanup.policy=compact, broker-side compression, LogAppendTime) is
// refused, saying why. Unknown names are refused.
package topicconfig

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a configuration's type, numbered as Kafka's DescribeConfigs
// config_type.
type Type int8

const (
	Boolean Type = 1
	String  Type = 2
	Int     Type = 3
	Short   Type = 4
	Long    Type = 5
	Double  Type = 6
	List    Type = 7
)

// Def is one topic configuration.
type Def struct {
	Name string
	Type Type
	// Default is Kafka's default value ("" for an empty list or string).
	Default string
	// Broker is the broker setting a topic without its own value takes
	// ("": none).
	Broker string
	Doc    string
	// Applied: Sluice acts on the value. Otherwise the value is kept and
	// shown, and Unsupported says which values it cannot honour.
	Applied bool
	// check validates a value's form and range ("" is fine).
	check func(string) string
	// unsupported says why Sluice cannot honour a valid value yet ("":
	// it can).
	unsupported func(string) string
}

const maxLong = "9223372036854775807"

func longIn(lo, hi int64) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			if hi == math.MaxInt64 {
				return fmt.Sprintf("want an integer >= %d", lo)
			}
			return fmt.Sprintf("want an integer in [%d, %d]", lo, hi)
		}
		return ""
	}
}

func atLeast(lo int64) func(string) string { return longIn(lo, math.MaxInt64) }

func boolean(v string) string {
	if v != "true" && v != "false" {
		return "want true or false"
	}
	return ""
}

func oneOf(values ...string) func(string) string {
	return func(v string) string {
		if !slices.Contains(values, v) {
			return "want one of " + strings.Join(values, ", ")
		}
		return ""
	}
}

func ratio(v string) string {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return "want a number in [0, 1]"
	}
	return ""
}

// replicaList is Kafka's throttled-replicas list: "", "*", or
// PARTITION:BROKER pairs separated by commas.
func replicaList(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || v == "*" {
		return ""
	}
	for _, pair := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if _, err := strconv.ParseUint(p, 10, 31); !ok || err != nil {
			return "want *, or PARTITION:BROKER pairs separated by commas"
		}
		if _, err := strconv.ParseUint(b, 10, 31); err != nil {
			return "want *, or PARTITION:BROKER pairs separated by commas"
		}
	}
	return ""
}

// onlyDefault refuses any value but def, with why.
func onlyDefault(def, why string) func(string) string {
	return func(v string) string {
		if v == def {
			return ""
		}
		return why
	}
}

var all = []Def{
	{Name: "cleanup.policy", Type: List, Default: "delete", Broker: "log.cleanup.policy",
		Doc: "delete: old segments are deleted by retention.ms and retention.bytes; compact: keep the latest record of each key",
		check: func(v string) string {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "delete" && p != "compact" {
					return "want delete, compact, or both separated by a comma"
				}
			}
			return ""
		},
		unsupported: func(v string) string {
			if strings.Contains(v, "compact") {
				return "log compaction is not implemented yet: only delete is"
			}
			return ""
		}},
	{Name: "compression.gzip.level", Type: Int, Default: "-1", Broker: "compression.gzip.level",
		Doc: "gzip level when the broker compresses (it does not: compression.type is producer)", check: longIn(-1, 9)},
	{Name: "compression.lz4.level", Type: Int, Default: "9", Broker: "compression.lz4.level",
		Doc: "lz4 level when the broker compresses (it does not: compression.type is producer)", check: longIn(1, 17)},
	{Name: "compression.zstd.level", Type: Int, Default: "3", Broker: "compression.zstd.level",
		Doc: "zstd level when the broker compresses (it does not: compression.type is producer)", check: longIn(-131072, 22)},
	{Name: "compression.type", Type: String, Default: "producer", Broker: "compression.type",
		Doc:   "the codec the broker stores batches in; producer keeps the producer's",
		check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		unsupported: onlyDefault("producer",
			"batches are stored as producers compressed them: only compression.type=producer is supported")},
	{Name: "delete.retention.ms", Type: Long, Default: "86400000", Broker: "log.cleaner.delete.retention.ms",
		Doc: "how long compaction keeps delete markers (no effect without compaction)", check: atLeast(0)},
	{Name: "file.delete.delay.ms", Type: Long, Default: "60000", Broker: "log.segment.delete.delay.ms",
		Doc: "how long a deleted segment's file waits (Sluice deletes at once)", check: atLeast(0)},
	{Name: "flush.messages", Type: Long, Default: maxLong, Broker: "log.flush.interval.messages",
		Doc: "records between fsyncs (Sluice fsyncs every write before acknowledging it)", check: atLeast(1)},
	{Name: "flush.ms", Type: Long, Default: maxLong, Broker: "log.flush.interval.ms",
		Doc: "time between fsyncs (Sluice fsyncs every write before acknowledging it)", check: atLeast(0)},
	{Name: "follower.replication.throttled.replicas", Type: List, Default: "", Broker: "follower.replication.throttled.replicas",
		Doc: "replicas whose followers are throttled (Sluice throttles partition moves by their own rate)", check: replicaList},
	{Name: "index.interval.bytes", Type: Int, Default: "4096", Broker: "log.index.interval.bytes",
		Doc: "bytes between offset index entries", check: longIn(0, math.MaxInt32)},
	{Name: "leader.replication.throttled.replicas", Type: List, Default: "", Broker: "leader.replication.throttled.replicas",
		Doc: "replicas whose leaders are throttled (Sluice throttles partition moves by their own rate)", check: replicaList},
	{Name: "local.retention.bytes", Type: Long, Default: "-2", Broker: "log.local.retention.bytes",
		Doc: "local bytes kept with tiered storage (-2: retention.bytes)", check: atLeast(-2),
		unsupported: onlyDefault("-2", "tiered storage is not implemented")},
	{Name: "local.retention.ms", Type: Long, Default: "-2", Broker: "log.local.retention.ms",
		Doc: "local time kept with tiered storage (-2: retention.ms)", check: atLeast(-2),
		unsupported: onlyDefault("-2", "tiered storage is not implemented")},
	{Name: "max.compaction.lag.ms", Type: Long, Default: maxLong, Broker: "log.cleaner.max.compaction.lag.ms",
		Doc: "longest a record stays uncompacted (no effect without compaction)", check: atLeast(1)},
	{Name: "max.message.bytes", Type: Int, Default: "1048576", Broker: "message.max.bytes", Applied: true,
		Doc: "the largest record batch the topic accepts"},
	{Name: "message.downconversion.enable", Type: Boolean, Default: "true", Broker: "log.message.downconversion.enable",
		Doc: "down-convert batches for old consumers (Sluice serves record batches only)", check: boolean},
	{Name: "message.format.version", Type: String, Default: "3.0-IV1", Broker: "log.message.format.version",
		Doc: "deprecated; every batch is in the record batch format (v2)"},
	{Name: "message.timestamp.after.max.ms", Type: Long, Default: maxLong, Broker: "log.message.timestamp.after.max.ms",
		Doc: "how far in the future a record's timestamp may be", check: atLeast(0),
		unsupported: onlyDefault(maxLong, "record timestamps are not checked against the broker's clock")},
	{Name: "message.timestamp.before.max.ms", Type: Long, Default: maxLong, Broker: "log.message.timestamp.before.max.ms",
		Doc: "how far in the past a record's timestamp may be", check: atLeast(0),
		unsupported: onlyDefault(maxLong, "record timestamps are not checked against the broker's clock")},
	{Name: "message.timestamp.difference.max.ms", Type: Long, Default: maxLong, Broker: "log.message.timestamp.difference.max.ms",
		Doc: "deprecated: the largest difference between a record's timestamp and the broker's clock", check: atLeast(0),
		unsupported: onlyDefault(maxLong, "record timestamps are not checked against the broker's clock")},
	{Name: "message.timestamp.type", Type: String, Default: "CreateTime", Broker: "log.message.timestamp.type",
		Doc: "CreateTime: the producer's timestamp; LogAppendTime: the broker's", check: oneOf("CreateTime", "LogAppendTime"),
		unsupported: onlyDefault("CreateTime", "records keep the producer's timestamp: LogAppendTime is not implemented")},
	{Name: "min.cleanable.dirty.ratio", Type: Double, Default: "0.5", Broker: "log.cleaner.min.cleanable.ratio",
		Doc: "share of uncompacted log that starts compaction (no effect without compaction)", check: ratio},
	{Name: "min.compaction.lag.ms", Type: Long, Default: "0", Broker: "log.cleaner.min.compaction.lag.ms",
		Doc: "shortest time a record stays uncompacted (no effect without compaction)", check: atLeast(0)},
	{Name: "min.insync.replicas", Type: Int, Default: "1", Broker: "min.insync.replicas", Applied: true,
		Doc: "in-sync replicas an acks=all write needs"},
	{Name: "preallocate", Type: Boolean, Default: "false", Broker: "log.preallocate",
		Doc: "preallocate segment files (Sluice does not)", check: boolean},
	{Name: "remote.log.copy.disable", Type: Boolean, Default: "false", Broker: "",
		Doc: "stop copying to tiered storage", check: boolean},
	{Name: "remote.log.delete.on.disable", Type: Boolean, Default: "false", Broker: "",
		Doc: "delete tiered data when tiered storage is turned off", check: boolean},
	{Name: "remote.storage.enable", Type: Boolean, Default: "false", Broker: "",
		Doc: "tiered storage for this topic", check: boolean,
		unsupported: onlyDefault("false", "tiered storage is not implemented")},
	{Name: "retention.bytes", Type: Long, Default: "-1", Broker: "log.retention.bytes", Applied: true,
		Doc: "bytes a partition keeps before its oldest segments are deleted; -1: no limit"},
	{Name: "retention.ms", Type: Long, Default: "604800000", Broker: "log.retention.ms", Applied: true,
		Doc: "how long records are kept; -1: forever"},
	{Name: "segment.bytes", Type: Int, Default: "1073741824", Broker: "log.segment.bytes", Applied: true,
		Doc: "size of a log segment file"},
	{Name: "segment.index.bytes", Type: Int, Default: "10485760", Broker: "log.index.size.max.bytes",
		Doc: "size of a segment's offset index", check: longIn(4, math.MaxInt32)},
	{Name: "segment.jitter.ms", Type: Long, Default: "0", Broker: "log.roll.jitter.ms",
		Doc: "random jitter subtracted from segment.ms", check: atLeast(0)},
	{Name: "segment.ms", Type: Long, Default: "604800000", Broker: "log.roll.ms",
		Doc: "time after which a segment is rolled", check: atLeast(1),
		unsupported: onlyDefault("604800000", "segments roll by size (segment.bytes), not by time")},
	{Name: "unclean.leader.election.enable", Type: Boolean, Default: "false", Broker: "unclean.leader.election.enable", Applied: true,
		Doc: "let a replica out of the ISR lead when no in-sync replica is alive (records may be lost)"},
}

func init() {
	slices.SortFunc(all, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
}

// All lists every topic configuration, sorted by name.
func All() []Def { return all }

// Lookup returns the configuration named name.
func Lookup(name string) (Def, bool) {
	i := slices.IndexFunc(all, func(d Def) bool { return d.Name == name })
	if i < 0 {
		return Def{}, false
	}
	return all[i], true
}

// Check says why name=value cannot be set on a topic (nil: it can) for a
// configuration Sluice does not apply; the applied ones are parsed and
// checked by their users. Unknown names are refused.
func Check(name, value string) error {
	d, ok := Lookup(name)
	switch {
	case !ok:
		return fmt.Errorf("unknown topic config %q", name)
	case d.check != nil:
		if why := d.check(value); why != "" {
			return fmt.Errorf("%s=%q: %s", name, value, why)
		}
	}
	if d.unsupported != nil {
		if why := d.unsupported(value); why != "" {
			return fmt.Errorf("%s=%q: %s", name, value, why)
		}
	}
	return nil
}

// Edit appends items to (or, with subtract, takes them from) the list
// config name whose value is current ("": the topic has none, the default
// is edited), as Kafka's IncrementalAlterConfigs APPEND and SUBTRACT do.
// items is comma-separated; the result keeps the current order and adds
// new items at the end, each once.
func Edit(name, current string, set bool, items string, subtract bool) (string, error) {
	d, ok := Lookup(name)
	switch {
	case !ok:
		return "", fmt.Errorf("unknown topic config %q", name)
	case d.Type != List:
		return "", fmt.Errorf("%s is not a list: only list configs can be appended to or subtracted from", name)
	}
	if !set {
		current = d.Default
	}
	split := func(v string) []string {
		var out []string
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" && !slices.Contains(out, item) {
				out = append(out, item)
			}
		}
		return out
	}
	list := split(current)
	for _, item := range split(items) {
		switch {
		case subtract:
			list = slices.DeleteFunc(list, func(s string) bool { return s == item })
		case !slices.Contains(list, item):
			list = append(list, item)
		}
	}
	return strings.Join(list, ","), nil
}
