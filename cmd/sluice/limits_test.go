package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// A broker started under a low open-files limit says so and what it caps;
// creating more partitions than it can host is refused with a clear error
// before anything is created, and the broker keeps serving.
func TestPartitionLimitFromOpenFiles(t *testing.T) {
	b := &brokerProc{t: t, Data: t.TempDir(), Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), logs: &lockedBuffer{}, openFiles: 1300}
	b.args = []string{"broker", "--data", b.Data, "--addr", b.Addr, "--http", "127.0.0.1:0"}
	b.start()
	t.Cleanup(b.kill)
	logs := b.logs.String()
	if !strings.Contains(logs, "open_files_limit=1300") || !strings.Contains(logs, "max_partitions=300") {
		t.Fatalf("the start log does not state the open-files limit and the partition limit it sets:\n%s", tail(logs, 20))
	}
	if !strings.Contains(logs, "raise it (ulimit -n)") {
		t.Fatalf("no warning that the open-files limit caps the partitions:\n%s", tail(logs, 20))
	}

	admin := newAdmin(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := admin.CreateTopic(ctx, client.TopicSpec{Name: "fits", Partitions: 200}); err != nil {
		t.Fatalf("200 partitions under a limit of 300: %v", err)
	}
	err := admin.CreateTopic(ctx, client.TopicSpec{Name: "toomany", Partitions: 150})
	if !errors.Is(err, client.ErrInvalidPartitions) || !strings.Contains(err.Error(), "at most 300") ||
		!strings.Contains(err.Error(), "hosts 200") {
		t.Fatalf("150 more partitions past the limit: %v; want INVALID_PARTITIONS naming the limit and what the broker hosts", err)
	}
	if topics, err := admin.ListTopics(ctx); err != nil || len(topics) != 1 {
		t.Fatalf("topics after the refusal: %v, %v; want only \"fits\"", topics, err)
	}
	produceTo(t, b.Addr, "fits", 199, "still-serving-", 0, 3)
	if got := consumeAll(t, b.Addr, "fits", 199); len(got) != 3 {
		t.Fatalf("read back %d records from fits-199, want 3", len(got))
	}
}
