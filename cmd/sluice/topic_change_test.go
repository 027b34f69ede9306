package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/internal/testutil"
)

// eventually runs check until it returns "" or the deadline passes, and
// fails with its last answer.
func eventually(t *testing.T, within time.Duration, check func() string) {
	t.Helper()
	testutil.Eventually(t, within, check)
}

// topic alter-config changes what running partitions enforce, and topic
// add-partitions grows a topic whose new partitions serve at once; every
// bad request is refused with its code and changes nothing.
func TestTopicAlterConfigAndAddPartitions(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "t", "--partitions", "2", "--config", "retention.ms=60000")
	b.cli("", "topic", "create", "other")

	b.cli("", "topic", "alter-config", "t", "--set", "max.message.bytes=2048", "--delete", "retention.ms")
	d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "t", "--format", "json"))[0]
	if len(d.Configs) != 1 || d.Configs["max.message.bytes"] != "2048" {
		t.Fatalf("configs after the change: %v", d.Configs)
	}
	big := strings.Repeat("x", 3000) + "\n"
	eventually(t, 20*time.Second, func() string {
		_, errOut, code := runCLI(t, big, "produce", "t", "--partition", "0", "--broker", b.Addr)
		if code == 0 || !strings.Contains(errOut, "RECORD_TOO_LARGE") {
			return "a 3,000-byte record under max.message.bytes=2048: exit 0"
		}
		return ""
	})

	// min.insync.replicas above the replicas refuses acks=all, and
	// deleting it lets acks=all through again.
	b.cli("", "topic", "alter-config", "t", "--set", "min.insync.replicas=2", "--set", "max.message.bytes=1048576")
	eventually(t, 20*time.Second, func() string {
		_, errOut, code := runCLI(t, "a\n", "produce", "t", "--partition", "0", "--acks", "all", "--timeout", "3s", "--broker", b.Addr)
		if code == 0 || !strings.Contains(errOut, "NOT_ENOUGH_REPLICAS") {
			return "acks=all with min.insync.replicas=2 and one replica: " + errOut
		}
		return ""
	})
	b.cli("", "topic", "alter-config", "t", "--delete", "min.insync.replicas")
	eventually(t, 20*time.Second, func() string {
		if _, errOut, code := runCLI(t, big, "produce", "t", "--partition", "0", "--acks", "all", "--broker", b.Addr); code != 0 {
			return "after the configs were deleted: " + errOut
		}
		return ""
	})

	b.cli("", "topic", "add-partitions", "t", "--to", "5")
	d = decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "t", "--format", "json"))[0]
	if len(d.Partitions) != 5 {
		t.Fatalf("%d partitions after add-partitions --to 5", len(d.Partitions))
	}
	b.cli("in-new\n", "produce", "t", "--partition", "4", "--acks", "all")
	if out := b.cli("", "consume", "t", "--partition", "4", "--offset", "start", "--to-end"); strings.TrimSpace(out) != "in-new" {
		t.Fatalf("partition 4 holds %q", out)
	}

	all := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "--all", "--format", "json"))
	if len(all) != 2 || all[0].Name != "other" || all[1].Name != "t" {
		t.Fatalf("describe --all: %+v", all)
	}
	if text := b.cli("", "topic", "describe", "--all"); !strings.Contains(text, "topic other") || !strings.Contains(text, "topic t") {
		t.Fatalf("describe --all:\n%s", text)
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"an unknown config", []string{"alter-config", "t", "--set", "colour=blue"}, 1, `INVALID_CONFIG: unknown topic config "colour"`},
		{"a value out of range", []string{"alter-config", "t", "--set", "min.insync.replicas=0"}, 1, "INVALID_CONFIG: min.insync.replicas=\"0\""},
		{"deleting an unknown config", []string{"alter-config", "t", "--delete", "colour"}, 1, "INVALID_CONFIG"},
		{"set and delete one key", []string{"alter-config", "t", "--set", "retention.ms=5", "--delete", "retention.ms"}, 1, "both set and deleted"},
		{"no change", []string{"alter-config", "t"}, 2, "want --set"},
		{"a missing topic", []string{"alter-config", "nosuch", "--set", "retention.ms=5"}, 1, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"fewer partitions", []string{"add-partitions", "t", "--to", "3"}, 1, "INVALID_PARTITIONS: topic \"t\" has 5 partitions; the count can only grow"},
		{"no count", []string{"add-partitions", "t"}, 2, "want --to N"},
		{"the internal topic", []string{"add-partitions", "__consumer_offsets", "--to", "100"}, 1, "INVALID_TOPIC"},
		{"describe without a name", []string{"describe"}, 2, "or --all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "", append([]string{"topic"}, append(c.args, "--broker", b.Addr)...)...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want %d), stderr lacks %q:\n%s", code, c.code, c.want, errOut)
			}
		})
	}
	d = decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "t", "--format", "json"))[0]
	if len(d.Configs) != 1 || d.Configs["max.message.bytes"] != "1048576" || len(d.Partitions) != 5 {
		t.Fatalf("the refused requests changed the topic: %v, %d partitions", d.Configs, len(d.Partitions))
	}
}

// A running producer finds partitions added to a topic once its view of
// the topic is older than MetadataMaxAge, without a restart.
func TestProducerFindsAddedPartitions(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "grows", 2, nil)
	p, err := client.NewProducer(b.Addr, client.MetadataMaxAge(200*time.Millisecond),
		client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: "grows", Partition: 3, Value: []byte("early")}); !errors.Is(err, client.ErrUnknownTopicOrPartition) {
		t.Fatalf("partition 3 of a 2-partition topic: %v", err)
	}
	if err := a.CreatePartitions(ctx, "grows", 4); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		_, off, err := p.ProduceSync(ctx, &client.Record{Topic: "grows", Partition: 3, Value: []byte("late")})
		if err != nil {
			return fmt.Sprintf("partition 3 after add-partitions: %v", err)
		}
		if off != 0 {
			return fmt.Sprintf("offset %d", off)
		}
		return ""
	})
}
