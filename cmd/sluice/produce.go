package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/client"
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
	key := fs.String("key", "", "key of every record (default: none, records spread round-robin)")
	acksFlag := fs.String("acks", "all", "0, 1 or all")
	partition := fs.Int("partition", -1, "send every record to this partition (default: by key)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up on a record after this long")
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
	scanner := bufio.NewScanner(stdin)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for scanner.Scan() {
		r := &client.Record{Topic: pos[0], Value: append([]byte(nil), scanner.Bytes()...), Partition: int32(*partition)}
		if keySet {
			r.Key = []byte(*key)
		}
		p.Produce(ctx, r, func(r *client.Record, err error) {
			if err != nil {
				failed.Add(1)
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
				fmt.Fprintf(stderr, "record %q: %v\n", r.Value, err)
			}
		})
	}
	if err := scanner.Err(); err != nil {
		p.Close()
		return fmt.Errorf("reading stdin: %w", err)
	}
	closeErr := p.Close()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d records were not acknowledged; first error: %v", n, firstErr)
	}
	return closeErr
}
