package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// franz-go's own integration tests (pkg/kgo at the version go.mod names)
// run against a broker's Kafka listener and pass: group ETL with range,
// cooperative-sticky and static members, producing, consuming, purging,
// decompression limits and the rest. Transactions, share groups and SCRAM
// are not served and are skipped; so are the tests franz-go itself skips.
func TestFranzGoIntegrationSuite(t *testing.T) {
	goBin := needTool(t, "go")
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--auto-create-topics", "--group-initial-rebalance-delay", "100ms")
	cmd := exec.Command(goBin, "test", "-count=1", "-timeout", "5m", "-skip", "TestTxn|TestShare|TestSCRAM",
		"github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+kafkaAddr(t, b), "KGO_TEST_RF=1", "KGO_TEST_RECORDS=20000",
		"KGO_TEST_MAX_TOPIC_PARTS=4", "KGO_LOG_LEVEL=none", "GOFLAGS=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok  \tgithub.com/twmb/franz-go/pkg/kgo") {
		t.Fatalf("franz-go's suite: %v\n%s", err, tail(string(out), 60))
	}
	t.Logf("franz-go's suite passed in %s", time.Since(start).Round(time.Second))
}
