package controller

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// stallingStore holds every CreateTopic until release is closed.
type stallingStore struct {
	cluster.MetadataStore
	entered chan string
	release chan struct{}
}

func (s *stallingStore) CreateTopic(ctx context.Context, f cluster.Fence, t *messages.TopicRecord, parts []*messages.PartitionState) error {
	s.entered <- t.Name
	<-s.release
	return s.MetadataStore.CreateTopic(context.Background(), f, t, parts)
}

// The controller's store calls run beside it: while one hangs, a request
// that does not write is answered, and those that write wait for it and
// then run in order, each with its own sender and headers.
func TestControllerServesWhileTheStoreIsSlow(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	backend, err := cluster.OpenEmbedded(t.TempDir(), cluster.Broker{ID: 0, Addr: system.Address()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	ctx := context.Background()
	clusterID, err := backend.CreateClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := backend.Campaign(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultBrokerConfig()
	cfg.ClusterID, cfg.Secure = clusterID, true
	cfg.DefaultReplicationFactor = 1
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := &stallingStore{MetadataStore: backend, entered: make(chan string, 1), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(store.release)
		}
	}
	t.Cleanup(release)
	pid := system.Root.Spawn(actor.PropsFromProducer(NewProducer(&cfg, store, lead)))
	system.Root.Send(pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 0, Addr: system.Address()}}})

	ask := func(msg proto.Message, header map[string]string) *actor.Future {
		f := actor.NewFuture(system, 10*time.Second)
		system.Root.Send(pid, &actor.MessageEnvelope{Header: header, Message: msg, Sender: f.PID()})
		return f
	}
	create := ask(&messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "slow", Partitions: 1}}}, nil)
	if name := <-store.entered; name != "slow" {
		t.Fatalf("the store got %q", name)
	}
	// Both write: they wait for the creation. The second claims to come
	// from the network as a user, who may not allocate producer ids.
	remove := ask(&messages.DeleteTopicsRequest{Names: []string{"slow"}}, nil)
	forged := ask(&messages.AllocateProducerIdsRequest{BrokerId: 0, Count: 10},
		map[string]string{transport.PrincipalHeader: "User:mallory", transport.PeerHeader: "127.0.0.1:1"})
	// This one does not write: it is answered with the store still held.
	res, err := ask(&messages.ReplicaOfflineRequest{Topic: "other", BrokerId: 0}, nil).Result()
	if err != nil {
		t.Fatalf("no answer while the store is slow: %v", err)
	}
	if r := res.(*messages.ReplicaOfflineResponse); r.Error != messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION {
		t.Fatalf("replica offline: %v %s", r.Error, r.ErrorMessage)
	}
	release()

	res, err = create.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.CreateTopicsResponse).Results[0]; r.Error != messages.ErrorCode_NONE {
		t.Fatalf("create: %v %s", r.Error, r.ErrorMessage)
	}
	res, err = remove.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*messages.DeleteTopicsResponse).Results[0]; r.Error != messages.ErrorCode_NONE {
		t.Fatalf("delete after the creation: %v %s", r.Error, r.ErrorMessage)
	}
	res, err = forged.Result()
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.(*messages.ErrorResponse); !ok || r.Error != messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED {
		t.Fatalf("a deferred request lost its headers: answered %v", res)
	}
}
