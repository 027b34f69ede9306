package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// systemBatch is one protoactor system message to target.
func systemBatch(t *testing.T, target *actor.PID, m proto.Message) *remote.MessageBatch {
	t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &remote.MessageBatch{TypeNames: []string{string(proto.MessageName(m))}, Targets: []*actor.PID{target},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: data}}}
}

// A peer that claims to be the broker's own node (or protoactor's
// "nonhost") sends Terminated, Watch and Unwatch naming the broker's own
// actors: the partition actors, the controller, the group hosts and the
// broker actor itself. None of it reaches an actor: every partition still
// takes writes, the controller still creates topics, the group
// coordinators still answer, and nothing was started again.
func TestForgedSystemMessagesStopNoActor(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "events", 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commit := func() error {
		_, err := a.ResetOffsets(ctx, "g", "events", client.AtStart())
		return err
	}
	// The offsets topic and its group hosts exist once a group was used.
	waitFor(t, "a group coordinator", func() bool { return commit() == nil })

	var victims []string
	for p := 0; p < 3; p++ {
		victims = append(victims, fmt.Sprintf("broker/p/events/%d", p))
	}
	victims = append(victims, "broker/controller", "broker")
	for p := 0; p < 50; p++ {
		victims = append(victims, fmt.Sprintf("broker/p/__consumer_offsets/%d", p))
		for e := 0; e < 3; e++ {
			victims = append(victims, fmt.Sprintf("broker/groups-%d-%d", p, e))
		}
	}
	// The broker actor and whatever unnamed actors sit beside it.
	receivers := []string{"broker"}
	for i := 1; i <= 40; i++ {
		receivers = append(receivers, fmt.Sprintf("$%d", i))
	}
	// The peer announces an address (this node's, or another), and names
	// actors there or on this node.
	for _, claim := range []struct{ announced, at string }{
		{b.Addr, b.Addr}, {"nonhost", "nonhost"}, {"127.0.0.1:1", b.Addr}, {"127.0.0.1:1", "127.0.0.1:1"},
	} {
		claimed := claim.at
		peer := dialRaw(t, b.Addr, claim.announced)
		var batches []*remote.MessageBatch
		for _, v := range victims {
			who := actor.NewPID(claimed, v)
			for _, r := range receivers {
				batches = append(batches, systemBatch(t, actor.NewPID(b.Addr, r), &actor.Terminated{Who: who}))
			}
			batches = append(batches,
				systemBatch(t, actor.NewPID(b.Addr, v), &actor.Unwatch{Watcher: actor.NewPID(claimed, "broker")}),
				systemBatch(t, actor.NewPID(b.Addr, v), &actor.Watch{Watcher: actor.NewPID(claimed, "x")}))
		}
		peer.send(batches...)
	}
	if !b.alive() {
		t.Fatalf("broker died:\n%s", tail(b.logs.String(), 40))
	}
	for p := int32(0); p < 3; p++ {
		produceN(t, b.Addr, "events", p, 2)
	}
	createTopic(t, a, "after-forgery", 1, nil)
	if err := commit(); err != nil {
		t.Fatalf("offset commit after the forgeries: %v", err)
	}
	for _, s := range []string{"starting it again", "cannot start", "stopped"} {
		if strings.Contains(b.logs.String(), s) {
			t.Fatalf("a forged system message reached an actor:\n%s", grepLines(b.logs.String(), s))
		}
	}
	if !strings.Contains(b.logs.String(), "claims to be this node") {
		t.Fatalf("the broker did not log the impostor:\n%s", tail(b.logs.String(), 20))
	}
}

// A message with a string that is not UTF-8 is refused with an error code
// and logged, and the message after it in the same batch is still
// delivered (protoactor would otherwise drop the batch and the stream).
func TestInvalidUTF8DoesNotDropTheStream(t *testing.T) {
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "utf8", 1, nil)
	good, err := proto.Marshal(&messages.ProduceRequest{Topic: "utf8", Acks: 0, Records: rawBatch("after the bad one")})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := proto.Marshal(&messages.ProduceRequest{Topic: "xx", Acks: 0, Records: rawBatch("bad")})
	i := bytes.Index(bad, []byte("xx"))
	bad[i], bad[i+1] = 0xff, 0xff
	// One batch: protoactor decodes a batch whole and drops it, and its
	// stream, at the first message it cannot decode.
	dialRaw(t, b.Addr, "127.0.0.1:1").send(&remote.MessageBatch{TypeNames: []string{"sluice.ProduceRequest"},
		Targets: []*actor.PID{actor.NewPID(b.Addr, "broker")}, Envelopes: []*remote.MessageEnvelope{{MessageData: bad}, {MessageData: good}}})
	waitFor(t, "the record sent after the bad message", func() bool {
		return len(consumeAll(t, b.Addr, "utf8", 0)) == 1
	})
	if !strings.Contains(b.logs.String(), "refused remote messages") {
		t.Fatalf("the refusal was not logged:\n%s", tail(b.logs.String(), 20))
	}
}
