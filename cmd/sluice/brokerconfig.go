package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicemq/sluice/kafka"
)

// A broker's settings come from, in rising order: the defaults, the file
// of --config, SLUICE_* variables, the command line.

// configEntry is one setting of a config file.
type configEntry struct {
	key, value string
	line       int
}

// kafkaNames maps Kafka's broker setting names onto the flags that mean
// the same, so a server.properties-style file reads as Kafka's would.
// Names ending in .ms or .seconds on duration flags are milliseconds or
// seconds.
var kafkaNames = map[string]string{
	"broker.id":                               "id",
	"log.dirs":                                "data",
	"log.dir":                                 "data",
	"auto.create.topics.enable":               "auto-create-topics",
	"num.partitions":                          "default-partitions",
	"default.replication.factor":              "default-replication-factor",
	"message.max.bytes":                       "max-message-bytes",
	"log.segment.bytes":                       "segment-bytes",
	"log.retention.ms":                        "retention-ms",
	"log.retention.bytes":                     "retention-bytes",
	"min.insync.replicas":                     "min-insync-replicas",
	"replica.lag.time.max.ms":                 "replica-lag-time-max",
	"broker.session.timeout.ms":               "broker-session-timeout",
	"broker.rack":                             "rack",
	"auto.leader.rebalance.enable":            "auto-leader-rebalance",
	"leader.imbalance.check.interval.seconds": "leader-imbalance-check-interval",
	"leader.imbalance.per.broker.percentage":  "leader-imbalance-per-broker-percentage",
	"log.retention.check.interval.ms":         "retention-check-interval",
	"offsets.topic.num.partitions":            "offsets-partitions",
	"offsets.topic.replication.factor":        "offsets-replication-factor",
	"offsets.retention.minutes":               "offsets-retention",
	"group.initial.rebalance.delay.ms":        "group-initial-rebalance-delay",
	"group.min.session.timeout.ms":            "group-min-session-timeout",
	"group.max.session.timeout.ms":            "group-max-session-timeout",
	"group.max.size":                          "group-max-size",
	"group.consumer.session.timeout.ms":       "group-consumer-session-timeout",
	"group.consumer.heartbeat.interval.ms":    "group-consumer-heartbeat-interval",
	"producer.id.expiration.ms":               "producer-id-expiration",
	"max.connections":                         "max-connections",
	"max.connections.per.ip":                  "max-connections-per-ip",
	"max.connections.per.ip.overrides":        "max-connections-per-ip-overrides",
	"connections.max.idle.ms":                 "connections-max-idle",
	"connections.max.reauth.ms":               "kafka-sasl-session-lifetime",
	"sasl.oauthbearer.jwks.endpoint.url":      "kafka-oauth-jwks",
	"sasl.oauthbearer.expected.issuer":        "kafka-oauth-issuer",
	"sasl.oauthbearer.expected.audience":      "kafka-oauth-audience",
	"queued.max.request.bytes":                "max-inflight-bytes",
	"super.users":                             "super-users",
}

// readConfigFile reads a YAML file (.yaml, .yml) or a properties file
// (anything else: key=value or key: value lines, # and ! comments).
func readConfigFile(path string) ([]configEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return parseYAMLConfig(data)
	}
	return parseProperties(data)
}

func parseProperties(data []byte) ([]configEntry, error) {
	var out []configEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d: want key=value, got %q", n, line)
		}
		out = append(out, configEntry{key: strings.TrimSpace(line[:i]), value: strings.TrimSpace(line[i+1:]), line: n})
	}
	return out, sc.Err()
}

// parseYAMLConfig reads a mapping of settings; nested mappings join their
// keys with dots (tls: {cert: F} is tls.cert) and lists become
// comma-separated values.
func parseYAMLConfig(data []byte) ([]configEntry, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	var out []configEntry
	var walk func(prefix string, n *yaml.Node) error
	walk = func(prefix string, n *yaml.Node) error {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: want a mapping of settings", n.Line)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			switch v.Kind {
			case yaml.MappingNode:
				if err := walk(key, v); err != nil {
					return err
				}
			case yaml.SequenceNode:
				var items []string
				for _, item := range v.Content {
					if item.Kind != yaml.ScalarNode {
						return fmt.Errorf("line %d: %s: want a list of values", item.Line, key)
					}
					items = append(items, item.Value)
				}
				out = append(out, configEntry{key: key, value: strings.Join(items, ","), line: k.Line})
			case yaml.ScalarNode:
				out = append(out, configEntry{key: key, value: v.Value, line: k.Line})
			default:
				return fmt.Errorf("line %d: %s: unsupported value", k.Line, key)
			}
		}
		return nil
	}
	return out, walk("", root.Content[0])
}

// flagForKey finds the flag a config key names: a flag name, the same with
// . or _ for -, or one of Kafka's names. unit is what a bare number means
// for a duration (0: a Go duration is wanted).
func flagForKey(fs *flag.FlagSet, key string) (f *flag.Flag, unit time.Duration) {
	if name, ok := kafkaNames[strings.ToLower(key)]; ok {
		switch {
		case strings.HasSuffix(key, ".ms"):
			unit = time.Millisecond
		case strings.HasSuffix(key, ".seconds"):
			unit = time.Second
		case strings.HasSuffix(key, ".minutes"):
			unit = time.Minute
		}
		return fs.Lookup(name), unit
	}
	name := strings.NewReplacer(".", "-", "_", "-").Replace(strings.ToLower(key))
	return fs.Lookup(name), 0
}

// kafkaSettings are the broker's settings under Kafka's names, in Kafka's
// units (milliseconds or seconds for durations), sorted by name, each
// marked set when the command line, the environment or --config gave it.
func kafkaSettings(fs *flag.FlagSet, sources map[string]string) []kafka.BrokerSetting {
	var out []kafka.BrokerSetting
	for _, key := range slices.Sorted(maps.Keys(kafkaNames)) {
		f, unit := flagForKey(fs, key)
		if f == nil {
			continue
		}
		value := f.Value.String()
		if g, ok := f.Value.(flag.Getter); ok && unit != 0 {
			if d, ok := g.Get().(time.Duration); ok {
				value = strconv.FormatInt(int64(d/unit), 10)
			}
		}
		if f.Name == "super-users" {
			value = strings.ReplaceAll(value, ",", ";")
		}
		out = append(out, kafka.BrokerSetting{Name: key, Value: value, Set: sources[f.Name] != ""})
	}
	return out
}

// durationFlag reports whether f holds a time.Duration.
func durationFlag(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}

// applyConfigFile sets from the file's entries every flag that the command
// line and the environment left alone, and records each one's source.
func applyConfigFile(fs *flag.FlagSet, path string, sources map[string]string) error {
	entries, err := readConfigFile(path)
	if err != nil {
		return usageErr("--config %s: %v", path, err)
	}
	for _, e := range entries {
		f, unit := flagForKey(fs, e.key)
		if f == nil || f.Name == "config" || f.Name == "print-config" {
			return usageErr("--config %s: line %d: unknown setting %q (see 'sluice broker -h')", path, e.line, e.key)
		}
		if sources[f.Name] != "" {
			continue // the command line or the environment set it
		}
		value := e.value
		if unit != 0 && durationFlag(f) {
			if n, err := strconv.ParseInt(value, 10, 64); err == nil {
				value = (time.Duration(n) * unit).String()
			}
		}
		if f.Name == "super-users" {
			value = strings.ReplaceAll(value, ";", ",") // Kafka separates them with ;
		}
		if err := f.Value.Set(value); err != nil {
			return usageErr("--config %s: line %d: %s=%q: %v", path, e.line, e.key, e.value, err)
		}
		sources[f.Name] = "file " + path
	}
	return nil
}

// flagSources says which flags the command line and the environment set.
func flagSources(fs *flag.FlagSet) map[string]string {
	sources := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := os.LookupEnv(envName(f.Name)); ok {
			sources[f.Name] = "env " + envName(f.Name)
		}
	})
	fs.Visit(func(f *flag.Flag) { sources[f.Name] = "command line" })
	return sources
}

// printConfig writes every setting as name=value, sorted by name, in a form
// --config reads back; a comment line before each setting that is not a
// default says where it came from.
func printConfig(w io.Writer, fs *flag.FlagSet, sources map[string]string) {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "print-config" && f.Name != "config" {
			names = append(names, f.Name)
		}
	})
	slices.Sort(names)
	for _, name := range names {
		if src := sources[name]; src != "" {
			fmt.Fprintf(w, "# from %s\n", src)
		}
		fmt.Fprintf(w, "%s=%s\n", name, fs.Lookup(name).Value.String())
	}
}
