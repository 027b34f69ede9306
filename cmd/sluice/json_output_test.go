package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// decodeLines decodes each line of out as one JSON object into a new T.
func decodeLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var all []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		all = append(all, v)
	}
	return all
}

// --format json prints one object per line that decodes to what the text
// output says, for topics, groups and benchmarks.
func TestJSONOutput(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=60000")
	b.cli("", "topic", "create", "audit")
	b.cli("a:1\nb:2\nc:3\nd:4\n", "produce", "orders", "--key-delimiter", ":")

	topics := decodeLines[topicListJSON](t, b.cli("", "topic", "list", "--format", "json"))
	if len(topics) != 2 || topics[0].Name != "audit" || topics[1].Name != "orders" || topics[1].Partitions != 3 || topics[1].ReplicationFactor != 1 || topics[1].TopicID == "" {
		t.Errorf("topic list: %+v", topics)
	}

	desc := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "orders", "--format", "json"))
	if len(desc) != 1 || len(desc[0].Partitions) != 3 || desc[0].Configs["retention.ms"] != "60000" {
		t.Fatalf("topic describe: %+v", desc)
	}
	var total int64
	for _, p := range desc[0].Partitions {
		if p.Leader != 0 && len(p.ISR) != 1 {
			t.Errorf("partition %+v", p)
		}
		total += p.HighWatermark
	}
	if total != 4 {
		t.Errorf("the high watermarks add up to %d, want the 4 records produced", total)
	}

	b.cli("", "consume", "orders", "--group", "billing", "--from-beginning", "--max", "4")
	groups := decodeLines[groupListJSON](t, b.cli("", "group", "list", "--format", "json"))
	if len(groups) != 1 || groups[0].Group != "billing" {
		t.Errorf("group list: %+v", groups)
	}
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "billing", "--format", "json"))
	var committed int64
	for _, p := range g[0].Partitions {
		if p.Topic != "orders" || p.Lag != 0 {
			t.Errorf("group partition %+v", p)
		}
		committed += max(p.Committed, 0) // -1: nothing committed (an empty partition)
	}
	if g[0].Group != "billing" || len(g[0].Partitions) != 3 || committed != 4 {
		t.Errorf("group describe: %+v", g)
	}

	bp := decodeLines[benchJSON](t, b.cli("", "bench", "produce", "--topic", "speed", "--records", "500", "--size", "100", "--format", "json"))
	if bp[0].Mode != "produce" || bp[0].Records != 500 || bp[0].Bytes != 50000 || bp[0].RecordsPerSec <= 0 || bp[0].LatencyP99Ms <= 0 || bp[0].Failed != 0 {
		t.Errorf("bench produce: %+v", bp)
	}
	out, errOut, code := runCLI(t, "", "bench", "consume", "--topic", "speed", "--records", "500", "--format", "json", "--broker", b.Addr)
	if code != 0 || strings.Contains(errOut, "records/s") {
		t.Fatalf("bench consume: exit %d; stderr (no progress line unless a terminal): %q", code, errOut)
	}
	bc := decodeLines[benchJSON](t, out)
	if bc[0].Mode != "consume" || bc[0].Records != 500 || bc[0].Bytes != 50000 {
		t.Errorf("bench consume: %+v", bc)
	}

	if _, errOut, code := runCLI(t, "", "topic", "list", "--format", "yaml", "--broker", b.Addr); code != 2 || !strings.Contains(errOut, "want text or json") {
		t.Errorf("--format yaml: exit %d, %s", code, errOut)
	}
}

// On a terminal, produce shows how many records were acknowledged while
// records are piped in.
func TestProgressOnTerminal(t *testing.T) {
	needTool(t, "script") // gives the command a terminal
	b := startBroker(t)
	b.cli("", "topic", "create", "t")
	// stdin stays open for 3 s after 100 records, so the once-a-second
	// progress line is drawn at least twice.
	line := fmt.Sprintf("(seq 1 100; sleep 3) | %s produce t --broker %s", cliBin, b.Addr)
	out, err := exec.Command("script", "-qec", line, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "produce t: 100 records") {
		t.Fatalf("no progress on the terminal: %q", out)
	}
}
