package actors

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sluicemq/sluice/messages/topicconfig"
	"github.com/sluicemq/sluice/storage"
)

// Topic configuration names, as in Kafka.
const (
	ConfigRetentionMs     = "retention.ms"
	ConfigRetentionBytes  = "retention.bytes"
	ConfigSegmentBytes    = "segment.bytes"
	ConfigMaxMessageBytes = "max.message.bytes"
	ConfigMinISR          = "min.insync.replicas"
	ConfigUnclean         = "unclean.leader.election.enable"
)

// AppliedTopicConfigs are the topic configurations Sluice acts on; a
// topic may set every other one Kafka defines (topicconfig), kept and
// shown, where Sluice can honour its value.
var AppliedTopicConfigs = []string{ConfigRetentionMs, ConfigRetentionBytes, ConfigSegmentBytes,
	ConfigMaxMessageBytes, ConfigMinISR, ConfigUnclean}

// TopicConfig is a topic's parsed configuration.
type TopicConfig struct {
	// RetentionMs: delete data older than this; -1 keeps it forever.
	RetentionMs int64
	// RetentionBytes: delete the oldest data beyond this size per partition; -1: no limit.
	RetentionBytes int64
	// SegmentBytes is the WAL segment size.
	SegmentBytes int64
	// MaxMessageBytes is the largest record batch accepted.
	MaxMessageBytes int
	// MinISR is min.insync.replicas.
	MinISR int
	// UncleanLeaderElection lets an out-of-sync replica become leader.
	UncleanLeaderElection bool
}

// DefaultTopicConfig is Kafka's defaults, except for the segment size.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		RetentionMs:     7 * 24 * time.Hour.Milliseconds(),
		RetentionBytes:  -1,
		SegmentBytes:    storage.DefaultSegmentBytes,
		MaxMessageBytes: 1 << 20,
		MinISR:          1,
	}
}

// MaxMessageBytesLimit is the largest max.message.bytes a topic may set; the
// transport is sized for it.
const MaxMessageBytesLimit = 16 << 20

// ParseTopicConfig applies configs over defaults and validates every value,
// those Sluice keeps without acting on them too (topicconfig.Check).
// Errors name the key, the value and the allowed range or the reason.
func ParseTopicConfig(defaults TopicConfig, configs map[string]string) (TopicConfig, error) {
	c := defaults
	for _, key := range slices.Sorted(maps.Keys(configs)) {
		val := configs[key]
		var err error
		switch key {
		case ConfigRetentionMs:
			c.RetentionMs, err = parseInt(key, val, -1, 1<<62)
		case ConfigRetentionBytes:
			c.RetentionBytes, err = parseInt(key, val, -1, 1<<62)
		case ConfigSegmentBytes:
			c.SegmentBytes, err = parseInt(key, val, 64<<10, 1<<30)
		case ConfigMaxMessageBytes:
			var v int64
			v, err = parseInt(key, val, 1024, MaxMessageBytesLimit)
			c.MaxMessageBytes = int(v)
		case ConfigMinISR:
			var v int64
			v, err = parseInt(key, val, 1, 32)
			c.MinISR = int(v)
		case ConfigUnclean:
			c.UncleanLeaderElection, err = strconv.ParseBool(val)
			if err != nil {
				err = fmt.Errorf("%s=%q: want true or false", key, val)
			}
		default:
			err = topicconfig.Check(key, val)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

func parseInt(key, val string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(val, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%s=%q: want an integer in [%d, %d]", key, val, lo, hi)
	}
	if v == 0 && lo == -1 {
		return 0, fmt.Errorf("%s=%q: want -1 (no limit) or a positive integer", key, val)
	}
	return v, nil
}

// Values returns c as topic configuration names and values, the inverse
// of ParseTopicConfig.
func (c TopicConfig) Values() map[string]string {
	return map[string]string{
		ConfigRetentionMs:     strconv.FormatInt(c.RetentionMs, 10),
		ConfigRetentionBytes:  strconv.FormatInt(c.RetentionBytes, 10),
		ConfigSegmentBytes:    strconv.FormatInt(c.SegmentBytes, 10),
		ConfigMaxMessageBytes: strconv.Itoa(c.MaxMessageBytes),
		ConfigMinISR:          strconv.Itoa(c.MinISR),
		ConfigUnclean:         strconv.FormatBool(c.UncleanLeaderElection),
	}
}
