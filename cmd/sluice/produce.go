package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// parseAcks reads the --acks flag.
func parseAcks(s string) (client.AckLevel, error) {
	switch s {
	case "0":
		return client.NoAck, nil
	case "1":
		return client.LeaderAck, nil
	case "all", "-1":
		return client.AllAcks, nil
	}
	return 0, usageErr("--acks %q: want 0, 1 or all", s)
}

func runProduce(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("produce", stdout, stderr)
	conn := connFlags(fs)
	broker := conn.broker
	key := fs.String("key", "", "key of every record (default: none)")
	keyDelim := fs.String("key-delimiter", "", "split each line at the first SEP into key and value, as kcat's -K (a line without SEP has no key)")
	var headers headerFlag
	fs.Var(&headers, "header", "a header KEY=VALUE on every record (repeatable)")
	file := fs.String("file", "", "read records from this file instead of stdin")
	compression := codecFlag(fs)
	acksFlag := fs.String("acks", "all", "0, 1 or all")
	maxRecord := fs.Int("max-record-bytes", 1<<20, "largest record sent when the topic's max.message.bytes is not known to be larger (a topic config raises it; the broker judges by the topic's limit)")
	var partition partitionFlag
	fs.Var(&partition, "partition", "send every record to this partition (default: by key, or sticky when keyless)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up on a record after this long; the command stops at the first failure every record would meet (no such topic, no broker, not authorized)")
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one topic")
	}
	keySet := false
	fs.Visit(func(f *flag.Flag) { keySet = keySet || f.Name == "key" })
	if keySet && *keyDelim != "" {
		return usageErr("--key and --key-delimiter exclude each other")
	}
	acks, err := parseAcks(*acksFlag)
	if err != nil {
		return err
	}
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		stdin = f
	}
	if *maxRecord < 1024 || *maxRecord > 64<<20 {
		return usageErr("--max-record-bytes %d: want 1024 to %d", *maxRecord, 64<<20)
	}
	opts := []client.ProducerOpt{client.Acks(acks), conn.opt(clientLogger(stderr)), client.DeliveryTimeout(*timeout), client.Compression(compression.codec),
		client.MaxRecordBytes(*maxRecord)}
	if partition.set {
		opts = append(opts, client.WithPartitioner(client.ManualPartitioner()))
	}
	p, err := client.NewProducer(*broker, opts...)
	if err != nil {
		return err
	}
	// Ctrl-C or SIGTERM: stop reading, wait (bounded) for the records
	// already sent, and say how many were acknowledged. A second Ctrl-C
	// ends the wait at once.
	interrupt, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	var failed, sent atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	// fatal is set by a failure every later record would meet too: the
	// command stops reading instead of failing each record in turn.
	var fatal atomic.Bool
	// Acknowledged records, shown on a terminal while records are piped in.
	var acked meter
	stopProgress := func() {}
	if !isTerminal(stdin) {
		stopProgress = showProgress(stderr, "produce "+pos[0], 0, &acked)
	}
	lines, readErr := readLines(stdin, max(16<<20, *maxRecord+1))
	line := 0
read:
	for !fatal.Load() {
		var value []byte
		select {
		case <-interrupt.Done():
			break read
		case v, ok := <-lines:
			if !ok {
				break read
			}
			value = v
		}
		line++
		r := &client.Record{Topic: pos[0], Value: value, Partition: partition.n, Headers: headers}
		switch {
		case keySet:
			r.Key = []byte(*key)
		case *keyDelim != "":
			if k, v, ok := bytes.Cut(r.Value, []byte(*keyDelim)); ok {
				r.Key, r.Value = k, v
			}
		}
		n := line
		sent.Add(1)
		p.Produce(interrupt, r, func(r *client.Record, err error) {
			if err == nil {
				acked.add(1, len(r.Key)+len(r.Value))
				return
			}
			if errors.Is(err, context.Canceled) && interrupt.Err() != nil {
				sent.Add(-1) // interrupted while waiting for room: never sent
				return
			}
			failed.Add(1)
			everyRecord := failsEveryRecord(err)
			if everyRecord {
				fatal.Store(true)
				err = explainProduceError(err, pos[0], partition)
			}
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
			if !everyRecord {
				// The command ends with a failure that meets every
				// record, said once; others are said per record.
				fmt.Fprintf(stderr, "record %d (%s): %v\n", n, shortValue(r.Value), explainTooLarge(err, pos[0]))
			}
		})
	}
	if interrupt.Err() != nil {
		stopSignals()
		return finishInterrupted(p, stderr, stopProgress, &sent, &acked, &failed)
	}
	if !fatal.Load() {
		if err := <-readErr; err != nil {
			p.Close()
			stopProgress()
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
	closeErr := p.Close()
	stopProgress()
	if fatal.Load() {
		return firstErr
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %d records were not acknowledged (each is named above)", n, sent.Load())
	}
	return closeErr
}

// interruptGrace bounds how long an interrupted produce waits for the
// answers to the records it has sent.
const interruptGrace = 10 * time.Second

// finishInterrupted waits for the records already sent, then reports how
// many were acknowledged: an error when any were not.
func finishInterrupted(p *client.Producer, stderr io.Writer, stopProgress func(), sent *atomic.Int64, acked *meter, failed *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), interruptGrace)
	defer cancel()
	again, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	flushErr := p.Flush(again)
	stopProgress()
	if flushErr == nil {
		_ = p.Close()
	}
	n, ok := sent.Load(), acked.records.Load()
	unanswered := n - ok - failed.Load()
	fmt.Fprintf(stderr, "interrupted: %d of %d records sent were acknowledged", ok, n)
	switch {
	case unanswered > 0 && ctx.Err() != nil:
		fmt.Fprintf(stderr, ", %d had no answer within %v", unanswered, interruptGrace)
	case unanswered > 0:
		fmt.Fprintf(stderr, ", %d had no answer when interrupted again", unanswered)
	}
	if f := failed.Load(); f > 0 {
		fmt.Fprintf(stderr, ", %d failed", f)
	}
	fmt.Fprintln(stderr)
	if ok < n {
		return errAlreadyReported
	}
	return nil
}

// readLines reads r line by line beside the command, so that an interrupt
// is seen while a read waits; readErr has the read's error once lines is
// closed.
func readLines(r io.Reader, maxLine int) (lines <-chan []byte, readErr <-chan error) {
	out := make(chan []byte, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		scanner := bufio.NewScanner(r)
		scanner.Buffer(make([]byte, 64<<10), maxLine)
		for scanner.Scan() {
			out <- append([]byte(nil), scanner.Bytes()...)
		}
		errc <- scanner.Err()
	}()
	return out, errc
}

// failsEveryRecord reports whether a produce error will meet every record
// of the command, not just this one: the topic is missing, the principal
// may not write, or no broker can be reached.
func failsEveryRecord(err error) bool {
	if errors.Is(err, client.ErrNoBrokers) {
		return true
	}
	for _, code := range []messages.ErrorCode{messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION,
		messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED, messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED,
		messages.ErrorCode_SASL_AUTHENTICATION_FAILED, messages.ErrorCode_INVALID_TOPIC} {
		if errors.Is(err, code) {
			return true
		}
	}
	return false
}

// explainProduceError adds what a user can do about a failure.
func explainProduceError(err error, topic string, partition partitionFlag) error {
	if !errors.Is(err, messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION) {
		return err
	}
	if partition.set && !strings.Contains(err.Error(), "does not exist") {
		return fmt.Errorf("%w (grow the topic with 'sluice topic add-partitions %s --to %d')", err, topic, partition.n+1)
	}
	return fmt.Errorf("%w (create it with 'sluice topic create %s' or start the broker with --auto-create-topics)", err, topic)
}

// explainTooLarge says which limits a record too large meets.
func explainTooLarge(err error, topic string) error {
	if !errors.Is(err, messages.ErrorCode_RECORD_TOO_LARGE) {
		return err
	}
	return fmt.Errorf("%w; 'sluice topic alter-config %s --set max.message.bytes=N' raises the topic's limit, "+
		"--max-record-bytes sends larger records when the broker's default allows them", err, topic)
}

// shortValue names a record in a message without echoing all of it.
func shortValue(v []byte) string {
	const max = 32
	if len(v) <= max {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q... %d bytes", v[:max], len(v))
}

// headerFlag collects repeated --header KEY=VALUE flags, in order.
type headerFlag []client.Header

func (h *headerFlag) String() string {
	if h == nil {
		return ""
	}
	var parts []string
	for _, x := range *h {
		parts = append(parts, x.Key+"="+string(x.Value))
	}
	return strings.Join(parts, ",")
}

func (h *headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	*h = append(*h, client.Header{Key: k, Value: []byte(v)})
	return nil
}

// compressionFlag is --compression: a codec by its Kafka name.
type compressionFlag struct{ codec record.Codec }

func (c *compressionFlag) String() string { return c.codec.String() }

func (c *compressionFlag) Set(s string) (err error) {
	c.codec, err = record.ParseCodec(s)
	return err
}

func codecFlag(fs *flag.FlagSet) *compressionFlag {
	c := &compressionFlag{}
	fs.Var(c, "compression", "compress batches: none, gzip, snappy, lz4 or zstd (consumers of either door decompress them)")
	return c
}
