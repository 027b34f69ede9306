package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

func runTopic(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("want create, list, describe, offsets, alter-config, add-partitions, elect-leaders or delete")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("topic "+sub, stdout, stderr)
	conn := connFlags(fs)
	broker := conn.broker
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var format *outputFormat
	var internal *bool
	if sub == "list" || sub == "describe" {
		format = formatFlag(fs)
		internal = fs.Bool("internal", false, "include the cluster's internal topics (__consumer_offsets)")
	}
	var partitions, rf *int
	configs := configFlag{}
	var all *bool
	if sub == "describe" {
		all = fs.Bool("all", false, "describe every topic")
	}
	set, del := configFlag{}, listFlag{}
	if sub == "alter-config" {
		fs.Var(set, "set", "set topic config KEY=VALUE (repeatable)")
		fs.Var(&del, "delete", "delete topic config KEY, back to the broker default (repeatable)")
	}
	var at *string
	if sub == "offsets" {
		at = fs.String("time", "latest", "earliest, latest (the high watermark), max-timestamp (the record with the largest timestamp), or a time (Unix ms or RFC 3339: the first record at or after it)")
	}
	var to *int
	if sub == "add-partitions" {
		to = fs.Int("to", 0, "the topic's new partition count, more than it has")
	}
	if sub == "create" {
		partitions = fs.Int("partitions", 0, "number of partitions (0: the broker default, --default-partitions)")
		rf = fs.Int("replicas", 0, "replication factor (0: the broker default)")
		fs.Var(configs, "config", "topic config KEY=VALUE (repeatable), e.g. retention.ms=60000")
	}
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	admin, err := client.NewAdmin(*broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	needName := func() (string, error) {
		if len(pos) != 1 {
			return "", usageErr("want exactly one topic name")
		}
		return pos[0], nil
	}
	switch sub {
	case "create":
		name, err := needName()
		if err != nil {
			return err
		}
		if err := admin.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: int32(*partitions),
			ReplicationFactor: int32(*rf), Configs: configs}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created topic %s\n", name)
	case "list":
		if format.json() {
			md, err := admin.Metadata(ctx)
			if err != nil {
				return err
			}
			slices.SortFunc(md.Topics, func(a, b client.TopicMetadata) int { return strings.Compare(a.Name, b.Name) })
			for _, t := range md.Topics {
				if client.IsInternalTopic(t.Name) && !*internal {
					continue
				}
				rf := 0
				if len(t.Partitions) > 0 {
					rf = len(t.Partitions[0].Replicas)
				}
				writeJSONLine(stdout, topicListJSON{Name: t.Name, TopicID: t.TopicID, Partitions: len(t.Partitions), ReplicationFactor: rf})
			}
			return nil
		}
		names, err := admin.ListTopics(ctx, listOpts(*internal)...)
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
	case "describe":
		names := pos
		switch {
		case *all && len(pos) > 0:
			return usageErr("--all or topic names, not both")
		case *all:
			if names, err = admin.ListTopics(ctx, listOpts(*internal)...); err != nil {
				return err
			}
		case len(pos) == 0:
			return usageErr("want a topic name, or --all")
		}
		for i, name := range names {
			info, err := admin.DescribeTopic(ctx, name)
			if err != nil {
				return fmt.Errorf("topic %s: %w", name, err)
			}
			if format.json() {
				writeJSONLine(stdout, topicJSON(info))
				continue
			}
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			printTopic(stdout, info)
		}
	case "alter-config":
		name, err := needName()
		if err != nil {
			return err
		}
		if len(set) == 0 && len(del) == 0 {
			return usageErr("want --set KEY=VALUE or --delete KEY")
		}
		if err := admin.AlterTopicConfig(ctx, name, set, del); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "altered config of topic %s\n", name)
	case "offsets":
		name, err := needName()
		if err != nil {
			return err
		}
		ts, err := listOffsetsTime(*at)
		if err != nil {
			return err
		}
		info, err := admin.DescribeTopic(ctx, name)
		if err != nil {
			return err
		}
		for _, p := range info.Partitions {
			off, err := admin.ListOffset(ctx, name, p.Partition, ts)
			if err != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			fmt.Fprintf(stdout, "%s %d %d\n", name, p.Partition, off)
		}
	case "add-partitions":
		name, err := needName()
		if err != nil {
			return err
		}
		if *to < 1 {
			return usageErr("want --to N, the new partition count")
		}
		if err := admin.CreatePartitions(ctx, name, int32(*to)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "topic %s has %d partitions now (records with a key may go to another partition than before)\n", name, *to)
	case "elect-leaders":
		return electLeaders(ctx, admin, pos, stdout)
	case "delete":
		name, err := needName()
		if err != nil {
			return err
		}
		if err := admin.DeleteTopic(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted topic %s\n", name)
	default:
		return usageErr("unknown topic command %q: want create, list, describe, offsets, alter-config, add-partitions, elect-leaders or delete", sub)
	}
	return nil
}

// listOffsetsTime is the ListOffsets timestamp that --time names.
func listOffsetsTime(s string) (int64, error) {
	switch s {
	case "earliest":
		return -2, nil
	case "latest":
		return -1, nil
	case "max-timestamp":
		return -3, nil
	}
	ms, err := parseTimestamp(s)
	if err != nil {
		return 0, usageErr("--time %q: want earliest, latest, max-timestamp or a time (Unix ms or RFC 3339)", s)
	}
	return ms, nil
}

func printTopic(w io.Writer, info *client.TopicInfo) {
	fmt.Fprintf(w, "topic %s (id %s)\n", info.Name, info.TopicID)
	for k, v := range info.Configs {
		fmt.Fprintf(w, "  %s=%s\n", k, v)
	}
	var brokers []string
	for _, b := range info.Brokers {
		brokers = append(brokers, fmt.Sprintf("%d at %s (%s)", b.ID, b.Address, orDash(b.Version)))
	}
	fmt.Fprintf(w, "  brokers: %s\n", strings.Join(brokers, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tLOG-START\tLEO\tHW\tERROR")
	for _, p := range info.Partitions {
		errText := ""
		if p.Err != nil {
			errText = p.Err.Error()
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\n", p.Partition, p.Leader, p.LeaderEpoch,
			ids(p.Replicas), ids(p.ISR), p.LogStartOffset, p.LogEndOffset, p.HighWatermark, errText)
	}
	tw.Flush()
}

type topicListJSON struct {
	Name              string `json:"name"`
	TopicID           string `json:"topic_id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
}

type topicDescJSON struct {
	Name       string            `json:"name"`
	TopicID    string            `json:"topic_id"`
	Configs    map[string]string `json:"configs"`
	Partitions []partitionJSON   `json:"partitions"`
	Brokers    []brokerJSON      `json:"brokers"`
}

type partitionJSON struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	LogStartOffset  int64   `json:"log_start_offset"`
	LogEndOffset    int64   `json:"log_end_offset"`
	HighWatermark   int64   `json:"high_watermark"`
	Error           string  `json:"error,omitempty"`
}

func topicJSON(info *client.TopicInfo) topicDescJSON {
	out := topicDescJSON{Name: info.Name, TopicID: info.TopicID, Configs: info.Configs, Partitions: []partitionJSON{}, Brokers: []brokerJSON{}}
	for _, b := range info.Brokers {
		out.Brokers = append(out.Brokers, brokerJSON{ID: b.ID, Address: b.Address, State: brokerState(b), Version: b.Version})
	}
	if out.Configs == nil {
		out.Configs = map[string]string{}
	}
	for _, p := range info.Partitions {
		pj := partitionJSON{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), OfflineReplicas: nonNil(p.OfflineReplicas),
			LogStartOffset: p.LogStartOffset, LogEndOffset: p.LogEndOffset, HighWatermark: p.HighWatermark}
		if p.Err != nil {
			pj.Error = p.Err.Error()
		}
		out.Partitions = append(out.Partitions, pj)
	}
	return out
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// configFlag collects repeated KEY=VALUE flags.
type configFlag map[string]string

func (c configFlag) String() string { return fmt.Sprint(map[string]string(c)) }

func (c configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	c[k] = v
	return nil
}

// listOpts are ListTopics's options for --internal.
func listOpts(internal bool) []client.ListTopicsOpt {
	if internal {
		return []client.ListTopicsOpt{client.IncludeInternal()}
	}
	return nil
}

// electLeaders gives partitions back to their preferred replicas and says
// what happened to each; it fails if one could not be elected.
func electLeaders(ctx context.Context, admin *client.Admin, args []string, stdout io.Writer) error {
	var targets []client.ElectionTarget
	for _, a := range args {
		topic, parts, found := strings.Cut(a, ":")
		t := client.ElectionTarget{Topic: topic}
		if found {
			for _, p := range strings.Split(parts, ",") {
				n, err := strconv.ParseInt(p, 10, 32)
				if err != nil || n < 0 {
					return usageErr("%q: want TOPIC or TOPIC:P,P,... with partition numbers", a)
				}
				t.Partitions = append(t.Partitions, int32(n))
			}
		}
		if topic == "" {
			return usageErr("%q: want TOPIC or TOPIC:P,P,...", a)
		}
		targets = append(targets, t)
	}
	results, err := admin.ElectLeaders(ctx, targets...)
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		switch {
		case r.Err == nil:
			fmt.Fprintf(stdout, "%s %d: elected its preferred replica\n", r.Topic, r.Partition)
		case errors.Is(r.Err, messages.ErrorCode_ELECTION_NOT_NEEDED):
			fmt.Fprintf(stdout, "%s %d: its preferred replica leads already\n", r.Topic, r.Partition)
		default:
			failed++
			if r.Partition < 0 {
				fmt.Fprintf(stdout, "%s: %v\n", r.Topic, r.Err)
			} else {
				fmt.Fprintf(stdout, "%s %d: %v\n", r.Topic, r.Partition, r.Err)
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions could not be given to their preferred replica", failed, len(results))
	}
	return nil
}
