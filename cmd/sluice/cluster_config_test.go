package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// sluice cluster config sets, lists and deletes dynamic broker settings:
// the cluster default num.partitions shapes the next topic created without
// a count, a broker's own value is listed under it, and a setting read at
// start is refused naming the ones that can change.
func TestClusterConfigCommand(t *testing.T) {
	b := startBroker(t, "--id", "1")
	b.cli("", "cluster", "config", "set", "num.partitions=3")
	b.cli("", "cluster", "config", "set", "max.connections.per.ip=500", "--broker-id", "1")
	_, errOut, code := runCLI(t, "", "cluster", "config", "set", "log.dirs=/x", "--broker", b.Addr)
	if code == 0 || !strings.Contains(errOut, "read at start") || !strings.Contains(errOut, "num.partitions") {
		t.Errorf("setting log.dirs: exit %d: %s", code, errOut)
	}
	listed := decodeLines[configsJSON](t, b.cli("", "cluster", "config", "--format", "json"))[0]
	if listed.Cluster["num.partitions"] != "3" || listed.Brokers["1"]["max.connections.per.ip"] != "500" ||
		!slices.Contains(listed.Dynamic, "log.retention.ms") || listed.Cluster["log.dirs"] != "" {
		t.Errorf("listed %+v", listed)
	}
	if text := b.cli("", "cluster", "config"); !strings.Contains(text, "broker 1") || !strings.Contains(text, "num.partitions") {
		t.Errorf("listed as text:\n%s", text)
	}
	eventually(t, 10*time.Second, func() string { // the brokers apply it as their metadata brings it
		name := "t" + time.Now().Format("150405.000000")
		b.cli("", "topic", "create", name)
		d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", name, "--format", "json"))[0]
		if len(d.Partitions) != 3 {
			return fmt.Sprintf("a topic created without a count has %d partitions", len(d.Partitions))
		}
		return ""
	})
	b.cli("", "cluster", "config", "delete", "num.partitions")
	b.cli("", "cluster", "config", "delete", "max.connections.per.ip", "--broker-id", "1")
	if listed := decodeLines[configsJSON](t, b.cli("", "cluster", "config", "--format", "json"))[0]; len(listed.Cluster) != 0 || len(listed.Brokers) != 0 {
		t.Errorf("after deleting both: %+v", listed)
	}
}
