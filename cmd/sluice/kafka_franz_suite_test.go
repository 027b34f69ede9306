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
// decompression limits and the rest; the same ETL with groups of Kafka's
// consumer protocol (KIP-848: range, uniform, static members) and its
// regular expression subscription resolved by the broker, which franz-go
// runs only when the broker serves ConsumerGroupHeartbeat v1; its SCRAM
// tests log in to a second broker whose Kafka listener takes SCRAM-SHA-512
// logins (SASL_PLAINTEXT).
// Transactions and share groups are not served and are skipped; so are
// the tests franz-go itself skips (OAUTHBEARER).
func TestFranzGoIntegrationSuite(t *testing.T) {
	goBin := needTool(t, "go")
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--auto-create-topics", "--group-initial-rebalance-delay", "100ms",
		"--group-consumer-heartbeat-interval", "500ms", "--max-connections-per-ip", "1000")
	certs := makeTestCerts(t)
	secure := startBroker(t, append([]string{"--id", "1", "--kafka-addr", "127.0.0.1:0", "--kafka-security-protocol", "SASL_PLAINTEXT"},
		certs.brokerFlags(1)...)...)
	if out, errOut, code := runCLI(t, "franz-secret\n", append([]string{"user", "password", "franz", "--mechanism", "SCRAM-SHA-512",
		"--broker", secure.Addr}, certs.as("user-admin", "ca")...)...); code != 0 {
		t.Fatalf("setting the SCRAM password: %s%s", out, errOut)
	}
	cmd := exec.Command(goBin, "test", "-v", "-count=1", "-timeout", "5m", "-skip", "TestTxn|TestShare",
		"github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+kafkaAddr(t, b), "KGO_TEST_RF=1", "KGO_TEST_RECORDS=20000",
		"KGO_TEST_MAX_TOPIC_PARTS=4", "KGO_LOG_LEVEL=none", "GOFLAGS=",
		"KGO_TEST_SCRAM_SEEDS="+kafkaAddr(t, secure), "KGO_TEST_SCRAM=franz:franz-secret:512")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok  \tgithub.com/twmb/franz-go/pkg/kgo") {
		t.Fatalf("franz-go's suite: %v\n%s", err, tail(string(out), 60))
	}
	for _, passed := range []string{"--- PASS: TestSCRAMAuth ", "--- PASS: TestSCRAMAuthBadCredentials ",
		"--- PASS: TestGroupETL/range/848 ", "--- PASS: TestGroupETL/sticky/848 ", "--- PASS: TestGroupETL/sticky/848/static ",
		"--- PASS: Test848RegexBrokerResolves "} {
		if !strings.Contains(string(out), passed) {
			t.Errorf("a franz-go test did not pass: no %q", strings.TrimSpace(passed))
		}
	}
	// A commit refused as stale makes franz-go skip its checks of a group.
	if strings.Contains(string(out), "stale commit encountered, skipping validation") {
		t.Error("franz-go skipped the checks of a KIP-848 group after a STALE_MEMBER_EPOCH commit")
	}
	t.Logf("franz-go's suite passed in %s", time.Since(start).Round(time.Second))
}
