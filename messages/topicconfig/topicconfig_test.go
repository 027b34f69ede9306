package topicconfig

import (
	"slices"
	"strings"
	"testing"
)

// Every name Kafka defines is known once, typed and documented; its
// default passes its own checks (Kafka's defaults are always accepted).
func TestCatalogue(t *testing.T) {
	names := make([]string, 0, len(all))
	for _, d := range all {
		names = append(names, d.Name)
		if d.Type == 0 || d.Doc == "" {
			t.Errorf("%s: type %d, doc %q", d.Name, d.Type, d.Doc)
		}
		if !d.Applied {
			if err := Check(d.Name, d.Default); err != nil {
				t.Errorf("Kafka's default refused: %v", err)
			}
		}
	}
	if len(names) != len(slices.Compact(slices.Clone(names))) {
		t.Errorf("a name twice: %v", names)
	}
	for _, name := range []string{"cleanup.policy", "compression.type", "retention.ms", "segment.ms", "message.timestamp.type",
		"flush.messages", "remote.storage.enable", "min.insync.replicas", "unclean.leader.election.enable"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s missing", name)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        string // "" accepted, else part of the error
	}{
		{"cleanup.policy", "delete", ""},
		{"cleanup.policy", "compact", "compaction is not implemented"},
		{"cleanup.policy", "compact,delete", "compaction is not implemented"},
		{"cleanup.policy", "archive", "want delete, compact"},
		{"compression.type", "producer", ""},
		{"compression.type", "zstd", "only compression.type=producer"},
		{"compression.type", "brotli", "want one of"},
		{"flush.messages", "1", ""},
		{"flush.messages", "0", "want an integer >= 1"},
		{"message.timestamp.type", "LogAppendTime", "LogAppendTime is not implemented"},
		{"segment.ms", "3600000", "segments roll by size"},
		{"min.cleanable.dirty.ratio", "0.7", ""},
		{"min.cleanable.dirty.ratio", "2", "want a number in [0, 1]"},
		{"leader.replication.throttled.replicas", "0:1,1:2", ""},
		{"leader.replication.throttled.replicas", "*", ""},
		{"leader.replication.throttled.replicas", "0-1", "PARTITION:BROKER"},
		{"remote.storage.enable", "true", "tiered storage"},
		{"preallocate", "yes", "want true or false"},
		{"no.such.config", "1", `unknown topic config "no.such.config"`},
	} {
		err := Check(tc.name, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s=%s: %v", tc.name, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s=%s: %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
}

func TestEdit(t *testing.T) {
	for _, tc := range []struct {
		name, current string
		set           bool
		items         string
		subtract      bool
		want, err     string
	}{
		{"cleanup.policy", "", false, "compact", false, "delete,compact", ""},
		{"cleanup.policy", "delete", true, "delete", true, "", ""},
		{"leader.replication.throttled.replicas", "0:1", true, "1:2, 0:1", false, "0:1,1:2", ""},
		{"leader.replication.throttled.replicas", "0:1,1:2", true, "0:1", true, "1:2", ""},
		{"retention.ms", "1", true, "2", false, "", "not a list"},
		{"colour", "", false, "x", false, "", "unknown"},
	} {
		got, err := Edit(tc.name, tc.current, tc.set, tc.items, tc.subtract)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: %q %v", tc, got, err)
		}
	}
}

// Any name and value a client sends are checked, and list edits made,
// without a panic; an edit's result of a list config is a list of its
// items, each once.
func FuzzCheckAndEdit(f *testing.F) {
	f.Add("cleanup.policy", "delete", "compact", false)
	f.Add("leader.replication.throttled.replicas", "0:1", "0:1,2:3", true)
	f.Add("retention.ms", "-1", "", false)
	f.Fuzz(func(t *testing.T, name, value, items string, subtract bool) {
		_ = Check(name, value)
		out, err := Edit(name, value, true, items, subtract)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, item := range strings.Split(out, ",") {
			if out != "" && (item == "" || seen[item]) {
				t.Fatalf("Edit(%q, %q, %q) = %q", name, value, items, out)
			}
			seen[item] = true
		}
	})
}
