package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// With principals, a producer id belongs to the principal that asked for
// it: another principal with Write on the topic can neither write with it
// (the owner's next batch would otherwise be taken for a duplicate and
// dropped) nor bump its epoch (which would fence the owner), and ids do
// not follow one another.
func TestProducerIDsBoundToTheirOwner(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1"}, certs.brokerFlags(1)...)...)
	admin := certs.as("user-admin", "ca")
	must := func(args ...string) {
		t.Helper()
		if _, errOut, code, _ := cli(t, b, "", admin, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	must("topic", "create", "orders")
	for _, who := range []string{"User:alice", "User:mallory"} {
		must("acl", "add", "--allow-principal", who, "--operation", "write", "--topic", "orders")
	}
	alice, mallory := certs.creds("user-alice"), certs.creds("user-mallory")

	initID := func(creds string, id int64, epoch int32) *messages.InitProducerIdResponse {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := forgeAs(t, creds, b.Addr, "broker", &messages.InitProducerIdRequest{ProducerId: id, ProducerEpoch: epoch}).(*messages.InitProducerIdResponse)
			if !r.Error.Retriable() && r.Error != messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED && r.Error != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED || time.Now().After(deadline) {
				return r
			}
			time.Sleep(100 * time.Millisecond) // ACLs and the key reach the broker
		}
	}
	produce := func(creds string, id int64, seq int32, value string) *messages.ProduceResponse {
		t.Helper()
		var bld record.Builder
		bld.Reset(record.Producer{ID: id, Epoch: 0, BaseSequence: seq})
		bld.Append(time.Now().UnixMilli(), nil, []byte(value), nil)
		return forgeAs(t, creds, b.Addr, "broker", &messages.ProduceRequest{Topic: "orders", Acks: -1, TimeoutMs: 10000,
			Records: append([]byte(nil), bld.Finish()...)}).(*messages.ProduceResponse)
	}

	first := initID(alice, -1, -1)
	second := initID(alice, -1, -1)
	if first.Error != messages.ErrorCode_NONE || second.Error != messages.ErrorCode_NONE {
		t.Fatalf("alice's producer ids: %v %s, %v %s", first.Error, first.ErrorMessage, second.Error, second.ErrorMessage)
	}
	id := first.ProducerId
	if d := second.ProducerId - id; d == 1 || d == -1 {
		t.Errorf("alice's ids %d and %d follow one another", id, second.ProducerId)
	}
	if r := produce(alice, id, 0, "a0"); r.Error != messages.ErrorCode_NONE || r.BaseOffset != 0 {
		t.Fatalf("alice's first batch: %v %s at %d", r.Error, r.ErrorMessage, r.BaseOffset)
	}
	if r := produce(mallory, id, 1, "forged"); r.Error != messages.ErrorCode_UNKNOWN_PRODUCER_ID {
		t.Fatalf("mallory writing with alice's id: %v %s, want UNKNOWN_PRODUCER_ID", r.Error, r.ErrorMessage)
	}
	if r := initID(mallory, id, 0); r.Error != messages.ErrorCode_NONE || r.ProducerId == id {
		t.Fatalf("mallory bumping alice's epoch: %v, id %d epoch %d; want an id of her own", r.Error, r.ProducerId, r.ProducerEpoch)
	}
	// Alice's next batch is stored, right after her first: nothing of
	// mallory's took its sequence number, and her epoch still holds.
	if r := produce(alice, id, 1, "a1"); r.Error != messages.ErrorCode_NONE || r.BaseOffset != 1 {
		t.Fatalf("alice's second batch: %v %s at %d, want offset 1", r.Error, r.ErrorMessage, r.BaseOffset)
	}
	if r := initID(alice, id, 0); r.Error != messages.ErrorCode_NONE || r.ProducerId != id || r.ProducerEpoch != 1 {
		t.Errorf("alice bumping her own epoch: %v, id %d epoch %d", r.Error, r.ProducerId, r.ProducerEpoch)
	}
	if !strings.Contains(b.logs.String(), "issued to another principal") {
		t.Errorf("the refusals were not logged:\n%s", tail(b.logs.String(), 10))
	}
}
