package coordinator

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/messages"
)

// startHost runs a group host over a stand-in broker whose offsets
// partition is empty and takes every write.
func startHost(t *testing.T) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	broker := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case *messages.FetchRequest:
			ctx.Respond(&messages.FetchResponse{})
		case *messages.ProduceRequest:
			ctx.Respond(&messages.ProduceResponse{})
		}
	}))
	cfg := actors.DefaultBrokerConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.GroupMetadata = budget.New(cfg.GroupMetadataMaxBytes, cfg.GroupMetadataMaxBytes/4)
	var meta atomic.Pointer[cluster.Snapshot]
	meta.Store(&cluster.Snapshot{Topics: map[string]*messages.TopicRecord{"e": {Name: "e", TopicId: "00", Partitions: 1}}})
	var overview atomic.Pointer[[]*messages.GroupOverview]
	host := system.Root.Spawn(HostProps(HostConfig{Partition: 0, Broker: &cfg, BrokerPID: broker, Meta: &meta, Overview: &overview}))
	return system, host
}

// A coordinator's report that it is idle may come after the host stopped
// it on an earlier report, or after another coordinator took its group:
// the host ignores it and keeps serving its groups.
func TestHostIgnoresALateIdleReport(t *testing.T) {
	system, host := startHost(t)
	beat := func(epoch int32) *messages.ConsumerGroupHeartbeatResponse {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			res, err := system.Root.RequestFuture(host, &messages.ConsumerGroupHeartbeatRequest{Group: "kept", MemberId: "m",
				MemberEpoch: epoch, RebalanceTimeoutMs: 60000, Topics: []string{"e"}, TopicsSet: true, OwnedSet: true}, 5*time.Second).Result()
			if err != nil {
				t.Fatal(err)
			}
			r := res.(*messages.ConsumerGroupHeartbeatResponse)
			if r.Error != messages.ErrorCode_COORDINATOR_NOT_AVAILABLE || time.Now().After(deadline) {
				return r
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if r := beat(0); r.Error != messages.ErrorCode_NONE || r.MemberEpoch != 1 {
		t.Fatalf("join: %v %s", r.Error, r.ErrorMessage)
	}
	system.Root.Send(host, groupIdle{group: "gone", pid: actor.NewPID("nonhost", "x"), handled: 1})
	system.Root.Send(host, groupIdle{group: "kept", pid: actor.NewPID("nonhost", "x"), handled: 1})
	if r := beat(1); r.Error != messages.ErrorCode_NONE || r.MemberEpoch != 1 {
		t.Fatalf("the member after late idle reports: %v %s (its coordinator was lost)", r.Error, r.ErrorMessage)
	}
}
