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
	"unicode/utf8"

	"github.com/sluicemq/sluice/client"
)

func runConsume(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("consume", stdout, stderr)
	conn := connFlags(fs)
	broker := conn.broker
	var partition partitionFlag
	fs.Var(&partition, "partition", "consume only this partition (default: every partition)")
	fromBeginning := fs.Bool("from-beginning", false, "start at the first offset: --offset start")
	offsetFlag := fs.String("offset", "", offsetHelp+" (default: end, only new records)")
	timestamp := fs.String("timestamp", "", "start at the first record at or after this time (Unix ms or RFC 3339): --offset @TIME")
	toEnd := fs.Bool("to-end", false, "exit once every partition is read up to its end as of the start (with --group: every partition the member owns)")
	maxRecords := fs.Int("max", 0, "exit after this many records (0: no limit)")
	group := fs.String("group", "", "consume as a member of this consumer group (offsets committed to it)")
	format := fs.String("format", "%v", "record format, one line each: %t topic, %p partition, %o offset, %k key, %v value, %h headers (k=v,...), %T timestamp (ms), %% percent; json: one JSON object per record; \\n and \\t are a newline and a tab")
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one topic")
	}
	if *maxRecords < 0 {
		return usageErr("--max %d: want 0 or more", *maxRecords)
	}
	topic := pos[0]
	spec := startSpec{kind: "end"}
	given := 0
	if *fromBeginning {
		spec, given = startSpec{kind: "start"}, given+1
	}
	if *offsetFlag != "" {
		if spec, err = parseStart(*offsetFlag); err != nil {
			return usageErr("--offset %v", err)
		}
		given++
	}
	if *timestamp != "" {
		ms, err := parseTimestamp(*timestamp)
		if err != nil {
			return usageErr("--timestamp: %v", err)
		}
		spec, given = startSpec{kind: "time", n: ms}, given+1
	}
	if given > 1 {
		return usageErr("--from-beginning, --offset and --timestamp exclude each other")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmpl := unescape(*format)
	if !strings.HasSuffix(tmpl, "\n") && tmpl != "json" {
		tmpl += "\n"
	}
	if *group != "" {
		if partition.set || *offsetFlag != "" || *timestamp != "" {
			return usageErr("--group takes no --partition, --offset or --timestamp: the group assigns partitions and remembers offsets")
		}
		reset := client.AtEnd()
		if *fromBeginning {
			reset = client.AtStart()
		}
		return consumeGroup(ctx, *broker, conn.opt(clientLogger(stderr)), *group, topic, reset, *maxRecords, *toEnd, tmpl, stdout, stderr)
	}

	admin, err := client.NewAdmin(*broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	starts, ends, err := startOffsets(ctx, admin, topic, partition, spec)
	admin.Close()
	if err != nil {
		return err
	}
	parts := map[int32]client.Offset{}
	for p, off := range starts {
		if *toEnd && off >= ends[p] {
			continue // nothing to read
		}
		parts[p] = client.AtOffset(off)
	}
	if len(parts) == 0 {
		return nil // --to-end, and every partition is at its end already
	}
	c, err := client.NewConsumer(*broker, conn.opt(clientLogger(stderr)),
		client.ConsumePartitions(map[string]map[int32]client.Offset{topic: parts}), client.ConsumeResetOffset(client.NoResetOffset()))
	if err != nil {
		return err
	}
	defer c.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	progress, stopProgress := consumeProgress(stdout, stderr, topic)
	defer stopProgress()
	if spec.kind == "end" {
		defer hintWhenIdle(stderr, progress, fmt.Sprintf("waiting for new records in %s: consume starts at the end (--from-beginning reads the records already there)", topic))()
	}
	seen := 0
	for (*maxRecords == 0 || seen < *maxRecords) && len(parts) > 0 {
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
			progress.add(1, len(r.Key)+len(r.Value))
			if *toEnd && r.Offset+1 >= ends[r.Partition] {
				delete(parts, r.Partition)
			}
		}
		seen += len(f.Records)
		out.Flush()
	}
	return nil
}

// startOffsets returns, for each partition to consume (one, or every
// partition of topic), the offset spec starts at and the partition's end.
func startOffsets(ctx context.Context, admin *client.Admin, topic string, only partitionFlag, spec startSpec) (starts, ends map[int32]int64, err error) {
	ti, err := admin.DescribeTopic(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	starts, ends = map[int32]int64{}, map[int32]int64{}
	for _, p := range ti.Partitions {
		if only.set && p.Partition != only.n {
			continue
		}
		r := partitionRange{start: p.LogStartOffset, end: p.HighWatermark}
		if p.Err != nil || r.start < 0 || r.end < 0 {
			// The describe could not read the leader's offsets: ask it.
			if r.start, err = admin.ListOffset(ctx, topic, p.Partition, -2); err != nil {
				return nil, nil, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			if r.end, err = admin.ListOffset(ctx, topic, p.Partition, -1); err != nil {
				return nil, nil, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
		}
		off, err := spec.resolve(ctx, admin, topic, p.Partition, r)
		if err != nil {
			return nil, nil, fmt.Errorf("partition %d: %w", p.Partition, err)
		}
		if spec.kind == "offset" && (off < r.start || off > r.end) {
			return nil, nil, fmt.Errorf("%w: partition %d holds offsets %d to %d (next %d); --offset %d is outside it (try --offset start, end or -N)",
				client.ErrOffsetOutOfRange, p.Partition, r.start, r.end-1, r.end, off)
		}
		starts[p.Partition], ends[p.Partition] = off, r.end
	}
	if len(starts) == 0 {
		return nil, nil, fmt.Errorf("%w: topic %q has %d partitions, no partition %d",
			client.ErrUnknownTopicOrPartition, topic, len(ti.Partitions), only.n)
	}
	return starts, ends, nil
}

// jsonRecord is a record as --format json prints it: key and value as
// text when they are UTF-8, else in base64 under key_base64 and
// value_base64.
type jsonRecord struct {
	Topic       string            `json:"topic"`
	Partition   int32             `json:"partition"`
	Offset      int64             `json:"offset"`
	Timestamp   int64             `json:"timestamp"`
	Key         *string           `json:"key"`
	KeyBase64   []byte            `json:"key_base64,omitempty"`
	Value       *string           `json:"value"`
	ValueBase64 []byte            `json:"value_base64,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

// textOrBytes puts b in text when it is UTF-8, else in raw.
func textOrBytes(b []byte, text **string, raw *[]byte) {
	switch {
	case b == nil:
	case utf8.Valid(b):
		s := string(b)
		*text = &s
	default:
		*raw = b
	}
}

// writeRecord prints r by the --format template.
func writeRecord(w *bufio.Writer, tmpl string, r *client.Record) {
	if tmpl == "json" {
		j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
		textOrBytes(r.Key, &j.Key, &j.KeyBase64)
		textOrBytes(r.Value, &j.Value, &j.ValueBase64)
		for _, h := range r.Headers {
			if j.Headers == nil {
				j.Headers = map[string]string{}
			}
			j.Headers[h.Key] = string(h.Value)
		}
		writeJSONLine(w, j)
		return
	}
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
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(h.Key)
				w.WriteByte('=')
				w.Write(h.Value)
			}
		case '%':
			w.WriteByte('%')
		default:
			w.WriteString("%" + string(tmpl[i]))
		}
	}
}

// consumeGroup consumes topic as a member of group, committing what it
// printed: on exit after --max records, on Ctrl-C, and every few seconds.
// With toEnd it exits once every partition it owns is read up to the end
// it had when first owned.
func consumeGroup(ctx context.Context, broker string, connOpt client.Opt, group, topic string, reset client.Offset, maxRecords int, toEnd bool, tmpl string, stdout, stderr io.Writer) error {
	c, err := client.NewGroupConsumer(broker, group, []string{topic}, connOpt,
		client.ConsumeResetOffset(reset), client.AutoCommitInterval(2*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	var ends *partitionEnds
	if toEnd {
		admin, err := client.NewAdmin(broker, connOpt)
		if err != nil {
			return err
		}
		defer admin.Close()
		ends = &partitionEnds{admin: admin, topic: topic, at: map[int32]int64{}}
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	progress, stopProgress := consumeProgress(stdout, stderr, topic)
	defer stopProgress()
	where := "end (--from-beginning: at the start)"
	if reset == client.AtStart() {
		where = "start"
	}
	defer hintWhenIdle(stderr, progress, fmt.Sprintf("waiting for records in %s as a member of group %s: it resumes at the group's commits, "+
		"and starts partitions without one at the %s", topic, group, where))()
	seen := 0
	for maxRecords == 0 || seen < maxRecords {
		if ends != nil {
			done, err := ends.reached(ctx, c.Positions()[topic])
			if err != nil || done {
				return err
			}
		}
		limit := 0
		if maxRecords > 0 {
			limit = maxRecords - seen
		}
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if ends != nil {
			// Look again at where the partitions stand even when
			// nothing comes.
			pollCtx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
		}
		f := c.PollRecords(pollCtx, limit)
		cancel()
		for _, e := range f.Errors {
			switch {
			case errors.Is(e.Err, context.Canceled) && ctx.Err() != nil:
				return nil
			case errors.Is(e.Err, context.DeadlineExceeded) && ends != nil && ctx.Err() == nil:
				continue
			case e.Partition < 0:
				return e.Err
			}
			return fmt.Errorf("partition %d: %w", e.Partition, e.Err)
		}
		for _, r := range f.Records {
			writeRecord(out, tmpl, r)
			progress.add(1, len(r.Key)+len(r.Value))
		}
		seen += len(f.Records)
		out.Flush()
	}
	return nil
}

// partitionEnds remembers each partition's end when a group member first
// owned it, for --to-end.
type partitionEnds struct {
	admin *client.Admin
	topic string
	at    map[int32]int64
}

// reached reports whether every owned partition's position is at its end.
func (e *partitionEnds) reached(ctx context.Context, positions map[int32]int64) (bool, error) {
	if len(positions) == 0 {
		return false, nil // not assigned yet
	}
	for p, pos := range positions {
		end, ok := e.at[p]
		if !ok {
			var err error
			if end, err = e.admin.ListOffset(ctx, e.topic, p, -1); err != nil {
				return false, fmt.Errorf("partition %d: %w", p, err)
			}
			e.at[p] = end
		}
		if pos < 0 || pos < end {
			return false, nil
		}
	}
	return true, nil
}

// idleHint is how long consume waits for a first record before saying
// what it waits for.
const idleHint = 2 * time.Second

// hintWhenIdle says, on a terminal, what consume waits for when no record
// has come within idleHint; the returned func cancels it.
func hintWhenIdle(stderr io.Writer, consumed *meter, hint string) (stop func()) {
	if !isTerminal(stderr) {
		return func() {}
	}
	t := time.AfterFunc(idleHint, func() {
		if consumed.records.Load() == 0 {
			fmt.Fprintln(stderr, hint)
		}
	})
	return func() { t.Stop() }
}

// consumeProgress shows records consumed on a terminal's stderr when the
// records themselves go elsewhere (a file, a pipe).
func consumeProgress(stdout, stderr io.Writer, topic string) (*meter, func()) {
	m := &meter{}
	if isTerminal(stdout) {
		return m, func() {}
	}
	return m, showProgress(stderr, "consume "+topic, 0, m)
}
