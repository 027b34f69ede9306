package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/client"
)

func runConsume(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("consume", stderr)
	conn := connFlags(fs)
	broker := conn.broker
	partition := fs.Int("partition", -1, "consume only this partition (default: all)")
	fromBeginning := fs.Bool("from-beginning", false, "start at the first offset (default: only new records)")
	offset := fs.Int64("offset", -1, "start at this offset")
	maxRecords := fs.Int("max", 0, "exit after this many records (0: run until interrupted)")
	group := fs.String("group", "", "consume as a member of this consumer group (offsets committed to it)")
	format := fs.String("format", "%v", "record format, one line each: %t topic, %p partition, %o offset, %k key, %v value, %T timestamp (ms), %% percent")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one topic")
	}
	topic := pos[0]
	start := client.AtEnd()
	switch {
	case *offset >= 0 && *fromBeginning:
		return usageErr("--offset and --from-beginning exclude each other")
	case *offset >= 0:
		start = client.AtOffset(*offset)
	case *fromBeginning:
		start = client.AtStart()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmpl := unescape(*format)
	if !strings.HasSuffix(tmpl, "\n") {
		tmpl += "\n"
	}
	if *group != "" {
		if *partition >= 0 || *offset >= 0 {
			return usageErr("--group takes no --partition or --offset: the group assigns partitions and remembers offsets")
		}
		reset := client.AtEnd()
		if *fromBeginning {
			reset = client.AtStart()
		}
		return consumeGroup(ctx, *broker, conn.opt(clientLogger(stderr)), *group, topic, reset, *maxRecords, tmpl, stdout, stderr)
	}

	admin, err := client.NewAdmin(*broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	md, err := admin.Metadata(ctx, topic)
	admin.Close()
	if err != nil {
		return err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != 0 && len(md.Topics[0].Partitions) == 0 {
		if len(md.Topics) == 1 {
			return md.Topics[0].Error.Err(md.Topics[0].ErrorMessage)
		}
		return fmt.Errorf("no metadata for topic %q", topic)
	}
	parts := map[int32]client.Offset{}
	for _, p := range md.Topics[0].Partitions {
		if *partition < 0 || p.Partition == int32(*partition) {
			parts[p.Partition] = start
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("%w: topic %q has no partition %d", client.ErrUnknownTopicOrPartition, topic, *partition)
	}
	c, err := client.NewConsumer(*broker, conn.opt(clientLogger(stderr)),
		client.ConsumePartitions(map[string]map[int32]client.Offset{topic: parts}), client.ConsumeResetOffset(client.NoResetOffset()))
	if err != nil {
		return err
	}
	defer c.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	seen := 0
	for *maxRecords == 0 || seen < *maxRecords {
		limit := 0
		if *maxRecords > 0 {
			limit = *maxRecords - seen
		}
		f := c.PollRecords(ctx, limit)
		for _, e := range f.Errors {
			if errors.Is(e.Err, context.Canceled) {
				return nil
			}
			if e.Partition < 0 {
				return e.Err
			}
			return fmt.Errorf("partition %d: %w", e.Partition, e.Err)
		}
		for _, r := range f.Records {
			writeRecord(out, tmpl, r)
		}
		seen += len(f.Records)
		out.Flush()
	}
	return nil
}

// writeRecord prints r by the --format template.
func writeRecord(w *bufio.Writer, tmpl string, r *client.Record) {
	for i := 0; i < len(tmpl); i++ {
		ch := tmpl[i]
		if ch != '%' || i+1 == len(tmpl) {
			w.WriteByte(ch)
			continue
		}
		i++
		switch tmpl[i] {
		case 't':
			w.WriteString(r.Topic)
		case 'p':
			w.WriteString(strconv.Itoa(int(r.Partition)))
		case 'o':
			w.WriteString(strconv.FormatInt(r.Offset, 10))
		case 'k':
			w.Write(r.Key)
		case 'v':
			w.Write(r.Value)
		case 'T':
			w.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		case '%':
			w.WriteByte('%')
		default:
			w.WriteString("%" + string(tmpl[i]))
		}
	}
}

// consumeGroup consumes topic as a member of group, committing what it
// printed: on exit after --max records, on Ctrl-C, and every few seconds.
func consumeGroup(ctx context.Context, broker string, connOpt client.Opt, group, topic string, reset client.Offset, maxRecords int, tmpl string, stdout, stderr io.Writer) error {
	c, err := client.NewGroupConsumer(broker, group, []string{topic}, connOpt,
		client.ConsumeResetOffset(reset), client.AutoCommitInterval(2*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	seen := 0
	for maxRecords == 0 || seen < maxRecords {
		limit := 0
		if maxRecords > 0 {
			limit = maxRecords - seen
		}
		f := c.PollRecords(ctx, limit)
		for _, e := range f.Errors {
			if errors.Is(e.Err, context.Canceled) {
				return nil
			}
			if e.Partition < 0 {
				return e.Err
			}
			return fmt.Errorf("partition %d: %w", e.Partition, e.Err)
		}
		for _, r := range f.Records {
			writeRecord(out, tmpl, r)
		}
		seen += len(f.Records)
		out.Flush()
	}
	return nil
}
