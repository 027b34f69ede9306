package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/testutil"
)

// consume's --offset takes Kafka's meanings, --to-end exits at the end,
// and invalid values are refused with exit code 2.
func TestConsumeOffsetsAndFormats(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "t", "--partitions", "2")
	var in strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b.cli(in.String(), "produce", "t", "--partition", "0", "--key-delimiter", ":", "--header", "src=test", "--header", "n=1")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an exact offset", []string{"--partition", "0", "--offset", "7"}, "v7 v8 v9"},
		{"records before the end", []string{"--partition", "0", "--offset", "-2"}, "v8 v9"},
		{"more before the end than there are", []string{"--partition", "0", "--offset", "-50"}, "v0 v1 v2 v3 v4 v5 v6 v7 v8 v9"},
		{"the start of every partition", []string{"--offset", "start"}, "v0 v1 v2 v3 v4 v5 v6 v7 v8 v9"},
		{"from-beginning", []string{"--from-beginning"}, "v0 v1 v2 v3 v4 v5 v6 v7 v8 v9"},
		{"the end", []string{"--offset", "end"}, ""},
		{"a time after every record", []string{"--timestamp", "2999-01-01T00:00:00Z"}, ""},
		{"a time before every record", []string{"--offset", "@0", "--partition", "0", "--max", "2"}, "v0 v1"},
		{"keys and headers", []string{"--partition", "0", "--offset", "-1", "--format", `%k=%v %h`}, "k9=v9 src=test,n=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := b.cli("", append([]string{"consume", "t", "--to-end"}, c.args...)...)
			if got := strings.Join(strings.Fields(out), " "); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		out := b.cli("", "consume", "t", "--to-end", "--offset", "start", "--format", "json")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 10 {
			t.Fatalf("%d lines:\n%s", len(lines), out)
		}
		var r struct {
			Topic     string
			Partition int32
			Offset    int64
			Timestamp int64
			Key       string
			Value     string
			Headers   map[string]string
		}
		if err := json.Unmarshal([]byte(lines[4]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Topic != "t" || r.Partition != 0 || r.Offset != 4 || r.Key != "k4" || r.Value != "v4" || r.Headers["src"] != "test" || r.Timestamp <= 0 {
			t.Fatalf("decoded %+v from %s", r, lines[4])
		}
	})

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a negative partition", []string{"--partition", "-2"}, 2, "want a partition number"},
		{"an offset that is not one", []string{"--offset", "soon"}, 2, "want start, end, N, -N or @TIME"},
		{"a bad time", []string{"--timestamp", "yesterday"}, 2, "RFC 3339"},
		{"a negative max", []string{"--max", "-1"}, 2, "want 0 or more"},
		{"two starts", []string{"--from-beginning", "--offset", "3"}, 2, "exclude each other"},
		{"an offset past the end", []string{"--partition", "0", "--offset", "50"}, 1, "partition 0 holds offsets 0 to 9 (next 10)"},
		{"a partition the topic lacks", []string{"--partition", "5"}, 1, "no partition 5"},
		{"a bad flag", []string{"--no-such-flag"}, 2, "flag provided but not defined"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, "", append([]string{"consume", "t", "--broker", b.Addr}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", code, c.code, c.want, stderr)
			}
		})
	}
	t.Run("an unknown command", func(t *testing.T) {
		if _, _, code := runCLI(t, "", "consumer"); code != 2 {
			t.Fatalf("exit %d, want 2", code)
		}
	})
	t.Run("produce to a negative partition", func(t *testing.T) {
		if _, stderr, code := runCLI(t, "x\n", "produce", "t", "--partition", "-1", "--broker", b.Addr); code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, stderr)
		}
	})
}

// Every flag can come from a SLUICE_* variable; the command line wins, and
// a bad value is refused naming the variable.
func TestFlagsFromEnvironment(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "t", "--partitions", "2")
	b.cli("a\nb\nc\n", "produce", "t", "--partition", "1")
	run := func(env []string, args ...string) (string, string, int) {
		return runCLIEnv(t, append([]string{"SLUICE_BROKER=" + b.Addr}, env...), "", args...)
	}
	env := []string{"SLUICE_PARTITION=1", "SLUICE_OFFSET=-2", "SLUICE_TO_END=true", "SLUICE_FORMAT=%o:%v"}
	if out, errOut, code := run(env, "consume", "t"); code != 0 || strings.Join(strings.Fields(out), " ") != "1:b 2:c" {
		t.Fatalf("from the environment: exit %d, %q %s", code, out, errOut)
	}
	if out, errOut, code := run(env, "consume", "t", "--offset", "start"); code != 0 || strings.Join(strings.Fields(out), " ") != "0:a 1:b 2:c" {
		t.Fatalf("--offset over SLUICE_OFFSET: exit %d, %q %s", code, out, errOut)
	}
	if _, errOut, code := run([]string{"SLUICE_MAX=lots"}, "consume", "t"); code != 2 || !strings.Contains(errOut, `SLUICE_MAX="lots"`) {
		t.Fatalf("a bad value: exit %d, %s", code, errOut)
	}
}

// While the broker is down, consume says so on stderr (once), keeps
// trying, says when it answers again, and prints what is written then.
func TestConsumeSaysWhileTheBrokerIsDown(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "down")
	cmd := exec.Command(cliBin, "consume", "down", "--from-beginning", "--max", "2", "--broker", b.Addr)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	b.cli("first\n", "produce", "down")
	testutil.WaitFor(t, 30*time.Second, "the first record", func() bool { return stdout.String() == "first\n" })
	b.kill9()
	testutil.WaitFor(t, 30*time.Second, "consume to say the broker is unreachable", func() bool {
		return strings.Contains(stderr.String(), "broker unreachable")
	})
	b.start()
	testutil.WaitFor(t, 30*time.Second, "consume to say the broker answers again", func() bool {
		return strings.Contains(stderr.String(), "broker answers again")
	})
	b.cli("back\n", "produce", "down")
	if err := cmd.Wait(); err != nil || stdout.String() != "first\nback\n" {
		t.Fatalf("consume: %v, printed %q\n%s", err, stdout.String(), stderr.String())
	}
	if n := strings.Count(stderr.String(), "broker unreachable"); n != 1 {
		t.Errorf("said %d times that the broker is unreachable:\n%s", n, stderr.String())
	}
}

// On a terminal, consume says what it waits for when nothing comes: by
// default only records written after it started.
func TestConsumeSaysWhatItWaitsFor(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give consume a terminal")
	}
	b := startBroker(t)
	b.cli("", "topic", "create", "quiet")
	b.cli("old\n", "produce", "quiet")
	// script runs consume on a pseudo-terminal and copies what it shows.
	cmd := exec.Command(scriptBin, "-qec", cliBin+" consume quiet --max 1 --broker "+b.Addr, "/dev/null")
	var shown lockedBuffer
	cmd.Stdout, cmd.Stderr = &shown, &shown
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	testutil.WaitFor(t, 30*time.Second, "consume to say what it waits for", func() bool {
		return strings.Contains(shown.String(), "waiting for new records in quiet: consume starts at the end (--from-beginning reads the records already there)")
	})
	b.cli("new\n", "produce", "quiet")
	if err := cmd.Wait(); err != nil || !strings.Contains(shown.String(), "new") || strings.Contains(shown.String(), "old") {
		t.Fatalf("consume: %v\n%s", err, shown.String())
	}
}
