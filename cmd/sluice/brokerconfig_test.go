package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A broker reads its settings from a properties or YAML file, with Kafka's
// names or its own; SLUICE_* variables override the file and flags
// override both; --print-config shows the result and where each came from.
func TestBrokerConfigFile(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("# Kafka's names\nbroker.id=5\nnum.partitions: 4\nreplica.lag.time.max.ms=15000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, "--config", props)
	b.cli("", "topic", "create", "t")
	d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "t", "--format", "json"))[0]
	if len(d.Partitions) != 4 || len(d.Brokers) != 1 || d.Brokers[0].ID != 5 {
		t.Fatalf("a broker started with num.partitions=4 and broker.id=5: %d partitions, brokers %+v", len(d.Partitions), d.Brokers)
	}

	printed := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cliBin, append([]string{"broker", "--print-config"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	f, err := os.OpenFile(props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("super.users=User:a;User:b\n") // Kafka separates them with ;
	f.WriteString("leader.imbalance.check.interval.seconds=60\nleader.imbalance.per.broker.percentage=20\nauto.leader.rebalance.enable=false\n")
	f.Close()
	out := printed([]string{"SLUICE_DEFAULT_PARTITIONS=8"}, "--config", props, "--id", "6")
	for _, want := range []string{
		"# from command line\nid=6\n",
		"# from env SLUICE_DEFAULT_PARTITIONS\ndefault-partitions=8\n",
		"# from file " + props + "\nreplica-lag-time-max=15s\n",
		"# from file " + props + "\nsuper-users=User:a,User:b\n",
		"# from file " + props + "\nleader-imbalance-check-interval=1m0s\n", // Kafka's .seconds
		"# from file " + props + "\nleader-imbalance-per-broker-percentage=20\n",
		"# from file " + props + "\nauto-leader-rebalance=false\n",
		"\nretention-ms=604800000\n", // a default, without a comment
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, out)
		}
	}
	// What --print-config prints, --config reads back.
	round := filepath.Join(dir, "round.properties")
	if err := os.WriteFile(round, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if again := printed(nil, "--config", round); !strings.Contains(again, "\nid=6\n") || !strings.Contains(again, "\ndefault-partitions=8\n") {
		t.Errorf("read back:\n%s", again)
	}

	yml := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(yml, []byte("id: 9\ntls:\n  ca: ca.crt\nsuper-users: [User:x, User:y]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = printed(nil, "--config", yml)
	for _, want := range []string{"\nid=9\n", "\ntls-ca=ca.crt\n", "\nsuper-users=User:x,User:y\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("YAML: --print-config lacks %q:\n%s", want, out)
		}
	}

	for _, c := range []struct{ name, file, content, want string }{
		{"an unknown setting", "bad.properties", "id=1\ncolour=blue\n", `line 2: unknown setting "colour"`},
		{"a bad value", "bad.properties", "max-connections=lots\n", `line 1: max-connections="lots"`},
		{"not key=value", "bad.properties", "just words\n", "line 1: want key=value"},
		{"YAML that is not a mapping", "bad.yaml", "- a\n- b\n", "want a mapping"},
		{"a missing file", "", "", "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "missing.properties")
			if c.file != "" {
				path = filepath.Join(dir, c.file)
				if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, errOut, code := runCLI(t, "", "broker", "--config", path, "--print-config")
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want 2), stderr lacks %q:\n%s", code, c.want, errOut)
			}
		})
	}
}
