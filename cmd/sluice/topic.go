package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/client"
)

func runTopic(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("want create, list, describe or delete")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("topic "+sub, stderr)
	conn := connFlags(fs)
	broker := conn.broker
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var partitions, rf *int
	configs := configFlag{}
	if sub == "create" {
		partitions = fs.Int("partitions", 1, "number of partitions")
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
		names, err := admin.ListTopics(ctx)
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
	case "describe":
		name, err := needName()
		if err != nil {
			return err
		}
		info, err := admin.DescribeTopic(ctx, name)
		if err != nil {
			return err
		}
		printTopic(stdout, info)
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
		return usageErr("unknown topic command %q: want create, list, describe or delete", sub)
	}
	return nil
}

func printTopic(w io.Writer, info *client.TopicInfo) {
	fmt.Fprintf(w, "topic %s (id %s)\n", info.Name, info.TopicID)
	for k, v := range info.Configs {
		fmt.Fprintf(w, "  %s=%s\n", k, v)
	}
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
