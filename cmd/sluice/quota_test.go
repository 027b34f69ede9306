package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// sluice quota sets, lists and deletes the client quotas the Kafka
// listener enforces: what it sets is what Kafka's DescribeClientQuotas
// reads, and bad keys and entities are refused with the reason.
func TestQuotaCommand(t *testing.T) {
	b := startBroker(t, "--id", "1", "--kafka-addr", "127.0.0.1:0")
	b.cli("", "quota", "set", "producer_byte_rate=1048576", "consumer_byte_rate=2097152", "--user", "alice")
	b.cli("", "quota", "set", "consumer_byte_rate=500000", "--default-client-id")
	for _, bad := range [][]string{
		{"quota", "set", "request_percentage=50", "--user", "alice"},
		{"quota", "set", "producer_byte_rate=0.5", "--user", "alice"},
		{"quota", "set", "producer_byte_rate=100"},
		{"quota", "set", "producer_byte_rate=100", "--user", "x", "--default-user"},
	} {
		if _, errOut, code := runCLI(t, "", append(bad, "--broker", b.Addr)...); code == 0 || errOut == "" {
			t.Errorf("sluice %v: exit %d: %s", bad, code, errOut)
		}
	}
	listed := decodeLines[quotaJSON](t, b.cli("", "quota", "list", "--format", "json"))
	byEntity := map[string]map[string]float64{}
	for _, q := range listed {
		switch {
		case q.User == "alice":
			byEntity["alice"] = q.Values
		case q.DefaultClientID:
			byEntity["default client id"] = q.Values
		}
	}
	if len(listed) != 2 || byEntity["alice"]["producer_byte_rate"] != 1048576 || byEntity["alice"]["consumer_byte_rate"] != 2097152 ||
		byEntity["default client id"]["consumer_byte_rate"] != 500000 {
		t.Errorf("listed %+v", listed)
	}
	if text := b.cli("", "quota", "list"); !strings.Contains(text, "user=alice") || !strings.Contains(text, "client-id=<default>") {
		t.Errorf("listed as text:\n%s", text)
	}
	// Kafka's tools read the same quotas.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, kafkaAddr(t, b)))
	described, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(described) != 2 {
		t.Errorf("DescribeClientQuotas: %+v %v", described, err)
	}
	b.cli("", "quota", "delete", "producer_byte_rate", "consumer_byte_rate", "--user", "alice")
	if listed := decodeLines[quotaJSON](t, b.cli("", "quota", "list", "--format", "json")); len(listed) != 1 || !listed[0].DefaultClientID {
		t.Errorf("after deleting alice's: %+v", listed)
	}
}
