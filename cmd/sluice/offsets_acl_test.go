package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
)

// A principal with Read on a group sees the group's committed offsets of
// the topics it may describe, and no others: the broker filters them, so
// every client of either door gets the same answer. A topic it names and
// may not describe is answered TOPIC_AUTHORIZATION_FAILED, as in Kafka.
func TestOffsetFetchOnlyVisibleTopics(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1"}, certs.brokerFlags(1)...)...)
	admin := certs.as("user-admin", "ca")
	must := func(flags []string, stdin string, args ...string) {
		t.Helper()
		if _, errOut, code, _ := cli(t, b, stdin, flags, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	for _, topic := range []string{"orders", "secret"} {
		must(admin, "", "topic", "create", topic)
		must(admin, "a\nb\n", "produce", topic)
		must(admin, "", "consume", topic, "--group", "g", "--from-beginning", "--max", "2")
	}
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--group", "g")
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--topic", "orders")

	alice := certs.creds("user-alice")
	// Before any ACL names her group, she is refused, and the refusal is
	// logged with who asked.
	if r := forgeAs(t, alice, b.Addr, "broker", &messages.OffsetFetchRequest{Group: "other"}).(*messages.OffsetFetchResponse); r.Error != messages.ErrorCode_GROUP_AUTHORIZATION_FAILED {
		t.Fatalf("alice fetching another group's offsets: %v", r.Error)
	}
	if logs := b.logs.String(); !strings.Contains(logs, "refused a request") || !strings.Contains(logs, "principal=User:alice") {
		t.Errorf("the refusal was not logged with its principal:\n%s", tail(logs, 10))
	}
	var all *messages.OffsetFetchResponse
	deadline := time.Now().Add(20 * time.Second)
	for {
		all = forgeAs(t, alice, b.Addr, "broker", &messages.OffsetFetchRequest{Group: "g"}).(*messages.OffsetFetchResponse)
		if all.Error == messages.ErrorCode_NONE {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's ACLs did not apply within 20 s: %v %s", all.Error, all.ErrorMessage)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var seen []string
	for _, e := range all.Offsets {
		seen = append(seen, e.Topic)
	}
	if len(all.Offsets) == 0 || strings.Contains(strings.Join(seen, " "), "secret") {
		t.Errorf("alice's view of every committed offset names %v; want orders only", seen)
	}

	named := forgeAs(t, alice, b.Addr, "broker", &messages.OffsetFetchRequest{Group: "g", Partitions: []*messages.TopicPartitions{
		{Topic: "orders", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}}}}).(*messages.OffsetFetchResponse)
	got := map[string]*messages.OffsetCommitEntry{}
	for _, e := range named.Offsets {
		got[e.Topic] = e
	}
	if o := got["orders"]; o == nil || o.Offset != 2 || o.Error != messages.ErrorCode_NONE {
		t.Errorf("orders-0 for alice: %v", o)
	}
	if s := got["secret"]; s == nil || s.Offset != -1 || s.Error != messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED {
		t.Errorf("secret-0 for alice: %v, want offset -1 and TOPIC_AUTHORIZATION_FAILED", s)
	}

	// A member of Kafka's consumer protocol subscribes only to topics it
	// may describe, as Kafka checks (Read on orders implies Describe).
	beat := func(topics ...string) *messages.ConsumerGroupHeartbeatResponse {
		return forgeAs(t, alice, b.Addr, "broker", &messages.ConsumerGroupHeartbeatRequest{Group: "g848", MemberId: "m",
			RebalanceTimeoutMs: 60000, Topics: topics, TopicsSet: true, OwnedSet: true}).(*messages.ConsumerGroupHeartbeatResponse)
	}
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--group", "g848")
	deadline = time.Now().Add(20 * time.Second)
	for r := beat("orders", "secret"); r.Error != messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED; r = beat("orders", "secret") {
		if r.Error != messages.ErrorCode_GROUP_AUTHORIZATION_FAILED || time.Now().After(deadline) {
			t.Fatalf("alice subscribing to a topic she may not describe: %v %s", r.Error, r.ErrorMessage)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := beat("orders"); r.Error != messages.ErrorCode_NONE || r.MemberEpoch != 1 {
		t.Errorf("alice subscribing to orders: %v %s", r.Error, r.ErrorMessage)
	}

	// A regular expression subscribes her to the matching topics she may
	// describe only (Kafka's rule): orders, not secret nor the offsets topic.
	must(admin, "", "acl", "add", "--allow-principal", "User:alice", "--operation", "read", "--group", "g848re")
	var re *messages.ConsumerGroupHeartbeatResponse
	deadline = time.Now().Add(20 * time.Second)
	for {
		re = forgeAs(t, alice, b.Addr, "broker", &messages.ConsumerGroupHeartbeatRequest{Group: "g848re", MemberId: "r",
			RebalanceTimeoutMs: 60000, Regex: ".*", RegexSet: true, OwnedSet: true}).(*messages.ConsumerGroupHeartbeatResponse)
		if re.Error != messages.ErrorCode_GROUP_AUTHORIZATION_FAILED || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if re.Error != messages.ErrorCode_NONE || len(re.Assignment) != 1 || len(re.Assignment[0].Partitions) != 1 {
		t.Errorf("alice subscribing to .*: %v %s, assigned %v; want orders' one partition", re.Error, re.ErrorMessage, re.Assignment)
	}

	// The admin, a super user here, sees both.
	adminView := forgeAs(t, certs.creds("user-admin"), b.Addr, "broker", &messages.OffsetFetchRequest{Group: "g"}).(*messages.OffsetFetchResponse)
	if len(adminView.Offsets) != 2 {
		t.Errorf("the admin sees %d committed offsets, want 2", len(adminView.Offsets))
	}
}
