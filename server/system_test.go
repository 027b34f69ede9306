package server

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// A broker in the program's own actor system: the program's actors run
// beside the broker's and ask it directly, clients share the system, and
// Close leaves the system to the program.
func TestBrokerInTheProgramsActorSystem(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	cfg := actors.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	srv, err := New(Config{Broker: cfg, Addr: "127.0.0.1:0", System: system})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if srv.System() != system {
		t.Fatal("the broker runs in a system of its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := client.NewAdmin(srv.Addr(), client.WithActorSystem(system))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTopic(ctx, client.TopicSpec{Name: "beside", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	// The program's own actor asks the broker actor for the metadata,
	// again while the broker has not yet seen the topic the controller
	// created (its metadata follows the store's, as Kafka's brokers do).
	answers := make(chan *messages.MetadataResponse, 1)
	type askAgain struct{}
	mine, err := system.Root.SpawnNamed(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started, askAgain:
			ctx.Request(transport.BrokerPID(srv.Addr()), &messages.MetadataRequest{Topics: []string{"beside"}})
		case *messages.MetadataResponse:
			if len(m.Topics) == 1 && m.Topics[0].Error == messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION {
				self := ctx.Self()
				time.AfterFunc(20*time.Millisecond, func() { system.Root.Send(self, askAgain{}) })
				return
			}
			answers <- m
		}
	}), "mine")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answers:
		if len(m.Topics) != 1 || m.Topics[0].Name != "beside" || m.Topics[0].Error != messages.ErrorCode_NONE {
			t.Fatalf("metadata %v", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the program's actor got no answer from the broker")
	}
	system.Root.Stop(mine)

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	// The system is still the program's to use.
	echo := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			ctx.Respond(s)
		}
	}))
	res, err := system.Root.RequestFuture(echo, "still here", 10*time.Second).Result()
	if err != nil || res != "still here" {
		t.Fatalf("after Close the program's system answered %v, %v", res, err)
	}
}
