package main

import (
	"runtime"
	"strings"
	"testing"
)

// 'sluice version' names the version, commit and Go version; every broker
// reports the same in its ready line and in metadata, which 'cluster info'
// and 'topic describe' show.
func TestVersionAndClusterInfo(t *testing.T) {
	v := binaryVersion(t)
	if v.Version == "" || v.Commit == "" || v.GoVersion != runtime.Version() {
		t.Fatalf("version: %+v", v)
	}
	text, _, _ := runCLI(t, "", "version")
	if !strings.Contains(text, "sluice "+v.Version) || !strings.Contains(text, v.Commit) {
		t.Errorf("version text: %q", text)
	}

	b := startBroker(t, "--id", "7")
	if !strings.Contains(b.logs.String(), "version="+v.Version) || !strings.Contains(b.logs.String(), "commit="+v.Commit) {
		t.Errorf("the ready line lacks the version: %s", tail(b.logs.String(), 3))
	}
	b.cli("", "topic", "create", "t", "--partitions", "2")
	c := decodeLines[clusterJSON](t, b.cli("", "cluster", "info", "--format", "json"))[0]
	want := brokerJSON{ID: 7, Address: b.Addr, State: "alive", Version: v.short()}
	if len(c.Brokers) != 1 || c.Brokers[0] != want || c.Controller != 7 || c.ClusterID == "" ||
		!strings.HasPrefix(c.MetadataStore, "embedded in "+b.Data) || c.Topics != 1 || c.Partitions != 2 {
		t.Errorf("cluster info: %+v, want broker %+v", c, want)
	}
	if text := b.cli("", "cluster", "info"); !strings.Contains(text, "controller: broker 7") || !strings.Contains(text, v.short()) {
		t.Errorf("cluster info text:\n%s", text)
	}
	d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "t", "--format", "json"))[0]
	if len(d.Brokers) != 1 || d.Brokers[0] != want {
		t.Errorf("topic describe brokers: %+v", d.Brokers)
	}
}

// binaryVersion is what the sluice binary under test says it is (the test
// binary itself carries no commit).
func binaryVersion(t *testing.T) buildInfo {
	t.Helper()
	out, errOut, code := runCLI(t, "", "version", "--format", "json")
	if code != 0 {
		t.Fatalf("version: exit %d: %s", code, errOut)
	}
	return decodeLines[buildInfo](t, out)[0]
}
