package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// `topic offsets` answers each --time for every partition, and `group
// reset-offsets --to-datetime/--by-duration` commits the first offset at
// or after the time (the end where no record is that late), for records
// whose timestamps go back and forth.
func TestCLIOffsetsByTime(t *testing.T) {
	b := startBroker(t)
	run := b.cli
	run("", "topic", "create", "when", "--partitions", "2")
	// Partition 0: offsets 0-4 at these minutes ago; partition 1 stays empty.
	now := time.Now().Truncate(time.Millisecond)
	ago := func(min int) time.Time { return now.Add(-time.Duration(min) * time.Minute) }
	p, err := client.NewProducer(b.Addr, sharedOpts(), client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, min := range []int{50, 20, 40, 20, 30} {
		if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: "when", Value: []byte("v"), Timestamp: ago(min)}); err != nil {
			t.Fatal(err)
		}
	}
	ms := func(tm time.Time) string { return fmt.Sprint(tm.UnixMilli()) }
	for _, c := range []struct{ time, want string }{
		{"earliest", "when 0 0\nwhen 1 0\n"},
		{"latest", "when 0 5\nwhen 1 0\n"},
		{"max-timestamp", "when 0 1\nwhen 1 -1\n"}, // the first of the two records 20 minutes ago
		{ms(ago(45)), "when 0 1\nwhen 1 -1\n"},
		{ago(35).UTC().Format(time.RFC3339Nano), "when 0 1\nwhen 1 -1\n"},
		{ms(ago(10)), "when 0 -1\nwhen 1 -1\n"},
	} {
		if out := run("", "topic", "offsets", "when", "--time", c.time); out != c.want {
			t.Errorf("topic offsets --time %s printed %q, want %q", c.time, out, c.want)
		}
	}
	if out := run("", "topic", "offsets", "when"); out != "when 0 5\nwhen 1 0\n" {
		t.Errorf("topic offsets (latest by default) printed %q", out)
	}
	if _, errOut, code := runCLI(t, "", "topic", "offsets", "when", "--time", "yesterday", "--broker", b.Addr); code != 2 || !strings.Contains(errOut, "want earliest, latest, max-timestamp or a time") {
		t.Errorf("--time yesterday: exit %d %q", code, errOut)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to-datetime", ms(ago(45))}, "when 0 -> 1\nwhen 1 -> 0\n"},
		{[]string{"--by-duration", "35m"}, "when 0 -> 1\nwhen 1 -> 0\n"},
		{[]string{"--by-duration", "10m"}, "when 0 -> 5\nwhen 1 -> 0\n"}, // no record that late: the end
		{[]string{"--to-datetime", ago(60).UTC().Format(time.RFC3339)}, "when 0 -> 0\nwhen 1 -> 0\n"},
	} {
		args := append([]string{"group", "reset-offsets", "G", "--topic", "when"}, c.args...)
		if out := run("", args...); out != c.want {
			t.Errorf("reset-offsets %v printed %q, want %q", c.args, out, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--by-duration", "1h", "--to-earliest"}, "want exactly one of"},
		{[]string{"--to-datetime", "soon"}, "--to-datetime"},
		{[]string{"--by-duration", "-5m"}, "want a positive duration"},
	} {
		args := append([]string{"group", "reset-offsets", "G", "--topic", "when", "--broker", b.Addr}, c.args...)
		if _, errOut, code := runCLI(t, "", args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("reset-offsets %v: exit %d %q, want exit 2 saying %q", c.args, code, errOut, c.want)
		}
	}
}
