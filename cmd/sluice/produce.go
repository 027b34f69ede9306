package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
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

func runProduce(args []string, stdin io.Reader, stderr io.Writer) error {
	fs := newFlagSet("produce", stderr)
	conn := connFlags(fs)
	broker := conn.broker
	key := fs.String("key", "", "key of every record (default: none; keyless records fill a batch for one partition, then the next, as Kafka's sticky partitioner)")
	acksFlag := fs.String("acks", "all", "0, 1 or all")
	partition := fs.Int("partition", -1, "send every record to this partition; -1: by key")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up on a record after this long; the command stops at the first failure every record would meet (no such topic, no broker, not authorized)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one topic")
	}
	keySet := false
	fs.Visit(func(f *flag.Flag) { keySet = keySet || f.Name == "key" })
	acks, err := parseAcks(*acksFlag)
	if err != nil {
		return err
	}
	opts := []client.Opt{client.Acks(acks), conn.opt(clientLogger(stderr)), client.DeliveryTimeout(*timeout)}
	if *partition >= 0 {
		opts = append(opts, client.WithPartitioner(client.ManualPartitioner()))
	}
	p, err := client.NewProducer(*broker, opts...)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var failed atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	// fatal is set by a failure every later record would meet too: the
	// command stops reading instead of failing each record in turn.
	var fatal atomic.Bool
	scanner := bufio.NewScanner(stdin)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; scanner.Scan() && !fatal.Load(); line++ {
		r := &client.Record{Topic: pos[0], Value: append([]byte(nil), scanner.Bytes()...), Partition: int32(*partition)}
		if keySet {
			r.Key = []byte(*key)
		}
		p.Produce(ctx, r, func(r *client.Record, err error) {
			if err == nil {
				return
			}
			failed.Add(1)
			if failsEveryRecord(err) {
				fatal.Store(true)
				err = explainProduceError(err, pos[0])
			}
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
			fmt.Fprintf(stderr, "record %d (%s): %v\n", line, shortValue(r.Value), err)
		})
	}
	if err := scanner.Err(); err != nil {
		p.Close()
		return fmt.Errorf("reading stdin: %w", err)
	}
	closeErr := p.Close()
	if fatal.Load() {
		return firstErr
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d records were not acknowledged; first error: %v", n, firstErr)
	}
	return closeErr
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
func explainProduceError(err error, topic string) error {
	if errors.Is(err, messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION) {
		return fmt.Errorf("%w (create it with 'sluice topic create %s' or start the broker with --auto-create-topics)", err, topic)
	}
	return err
}

// shortValue names a record in a message without echoing all of it.
func shortValue(v []byte) string {
	const max = 32
	if len(v) <= max {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q... %d bytes", v[:max], len(v))
}
