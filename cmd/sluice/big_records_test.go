package main

import (
	"strings"
	"testing"
)

// A record larger than the client's default (1 MiB) goes through when
// its topic allows it; for a topic that does not, the client says which
// limits to raise, and --max-record-bytes lets the broker be the judge.
func TestProduceBigRecords(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "big", "--config", "max.message.bytes=4194304")
	b.cli("", "topic", "create", "small")
	line := strings.Repeat("x", 2<<20)

	if _, stderr, code := runCLI(t, line+"\n", "produce", "big", "--broker", b.Addr); code != 0 {
		t.Fatalf("a 2 MiB record to a topic of 4 MiB records: exit %d\n%s", code, stderr)
	}
	out, stderr, code := runCLI(t, "", "consume", "big", "--from-beginning", "--max", "1", "--broker", b.Addr)
	if code != 0 || out != line+"\n" {
		t.Fatalf("consume: exit %d, %d bytes\n%s", code, len(out), stderr)
	}

	_, stderr, code = runCLI(t, line+"\n", "produce", "small", "--broker", b.Addr)
	if code == 0 || !strings.Contains(stderr, "RECORD_TOO_LARGE") || !strings.Contains(stderr, "max.message.bytes") ||
		!strings.Contains(stderr, "--max-record-bytes") {
		t.Fatalf("a 2 MiB record to a topic of 1 MiB records: exit %d\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, line+"\n", "produce", "small", "--max-record-bytes", "4194304", "--broker", b.Addr)
	if code == 0 || !strings.Contains(stderr, "RECORD_TOO_LARGE") {
		t.Fatalf("a 2 MiB record past the topic's limit, sent anyway: exit %d\n%s", code, stderr)
	}
	if !b.alive() {
		t.Fatal("the broker died")
	}
}
