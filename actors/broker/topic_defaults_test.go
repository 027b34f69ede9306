package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
)

// A dynamic default of a topic config reaches the running partitions of
// topics without their own value: message.max.bytes set as the cluster
// default refuses a larger batch, and deleting it gives back the flag.
func TestDynamicTopicDefaultsReachPartitions(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(*actors.BrokerConfig) {})
	tb.createTopic("plain", 1, nil)
	tb.createTopic("own", 1, map[string]string{"max.message.bytes": "1048576"})
	big := strings.Repeat("x", 4096)
	if r := tb.produce("plain", 0, 1, big); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("4 KiB under the flag: %v", r.Error)
	}
	alter := func(m *messages.AlterBrokerConfigsRequest) {
		t.Helper()
		m.BrokerId = -1
		if r := tb.ask(m).(*messages.AlterBrokerConfigsResponse); r.Error != messages.ErrorCode_NONE {
			t.Fatalf("%v: %v %s", m, r.Error, r.ErrorMessage)
		}
	}
	alter(&messages.AlterBrokerConfigsRequest{Set: []*messages.ConfigValue{{Name: "message.max.bytes", Value: "2048"}}})
	deadline := time.Now().Add(10 * time.Second)
	for r := tb.produce("plain", 0, 1, big); r.Error != messages.ErrorCode_RECORD_TOO_LARGE; r = tb.produce("plain", 0, 1, big) {
		if time.Now().After(deadline) {
			t.Fatalf("4 KiB with a cluster default of 2048: %v", r.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := tb.produce("own", 0, 1, big); r.Error != messages.ErrorCode_NONE {
		t.Errorf("4 KiB to a topic with its own value: %v", r.Error)
	}
	alter(&messages.AlterBrokerConfigsRequest{Delete: []string{"message.max.bytes"}})
	deadline = time.Now().Add(10 * time.Second)
	for r := tb.produce("plain", 0, 1, big); r.Error != messages.ErrorCode_NONE; r = tb.produce("plain", 0, 1, big) {
		if time.Now().After(deadline) {
			t.Fatalf("4 KiB after the default was deleted: %v", r.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
