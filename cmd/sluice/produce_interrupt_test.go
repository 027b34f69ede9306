package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// topicRecords is the sum of a topic's high watermarks.
func topicRecords(t *testing.T, a *client.Admin, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := a.DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range info.Partitions {
		n += p.HighWatermark
	}
	return n
}

// Ctrl-C while records are piped in: produce stops reading, waits for the
// records it has sent, says how many were acknowledged, and exits 0 when
// all were. The topic then holds exactly that many.
func TestProduceInterruptedReportsWhatWasAcknowledged(t *testing.T) {
	b := startBroker(t)
	admin := newAdmin(t, b.Addr)
	createTopic(t, admin, "events", 3, nil)

	cmd := exec.Command(cliBin, "produce", "events", "--broker", b.Addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// An endless pipe, as `yes | sluice produce`: it ends only when the
	// command stops reading.
	go func() {
		for i := 0; ; i++ {
			if _, err := io.WriteString(stdin, fmt.Sprintf("record %d\n", i)); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for topicRecords(t, admin, "events") < 1000 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("fewer than 1000 records written in 30 s:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 30 s after Ctrl-C:\n%s", stderr.String())
	}
	stdin.Close()
	if err != nil {
		t.Fatalf("exit %v after Ctrl-C:\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`interrupted: (\d+) of (\d+) records sent were acknowledged\n`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no summary:\n%s", stderr.String())
	}
	acked, _ := strconv.ParseInt(m[1], 10, 64)
	sent, _ := strconv.ParseInt(m[2], 10, 64)
	if got := topicRecords(t, admin, "events"); acked != sent || got != acked {
		t.Fatalf("%d of %d acknowledged, the topic holds %d:\n%s", acked, sent, got, stderr.String())
	}
	if strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("more than the summary on stderr:\n%s", stderr.String())
	}
	t.Logf("%s", strings.TrimSpace(stderr.String()))
}
