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

// stalledController is a controller actor over a store that holds every
// topic creation until release.
type stalledController struct {
	system  *actor.ActorSystem
	pid     *actor.PID
	store   *stallingStore
	release func()
}

func startStalledController(t *testing.T) *stalledController {
	t.Helper()
	return newStalledController(t, true)
}

// newStalledController starts the controller; with announce it hears of
// this broker as live at once.
func newStalledController(t *testing.T, announce bool) *stalledController {
	t.Helper()
	system, backend, clusterID, lead := startStore(t, 0)
	cfg := actors.DefaultBrokerConfig()
	cfg.ClusterID, cfg.Secure = clusterID, true
	cfg.DefaultReplicationFactor = 1
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := &stallingStore{MetadataStore: backend, entered: make(chan string, 1), release: make(chan struct{})}
	released := false
	sc := &stalledController{system: system, store: store, release: func() {
		if !released {
			released = true
			close(store.release)
		}
	}}
	t.Cleanup(sc.release)
	sc.pid = system.Root.Spawn(Props(&cfg, store, lead))
	if announce {
		system.Root.Send(sc.pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 0, Addr: system.Address()}}})
	}
	return sc
}

// startStore starts an actor system and an embedded metadata store with a
// cluster id, whose controller lock broker id holds.
func startStore(t *testing.T, id int32) (*actor.ActorSystem, *cluster.Embedded, string, *cluster.Leadership) {
	t.Helper()
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	backend, err := cluster.OpenEmbedded(t.TempDir(), cluster.Broker{ID: id, Addr: system.Address()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	ctx := context.Background()
	clusterID, err := backend.CreateClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := backend.Campaign(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return system, backend, clusterID, lead
}

// ask sends msg with header as a request and returns the future of its answer.
func (sc *stalledController) ask(msg proto.Message, header map[string]string) *actor.Future {
	f := actor.NewFuture(sc.system, 10*time.Second)
	sc.system.Root.Send(sc.pid, &actor.MessageEnvelope{Header: header, Message: msg, Sender: f.PID()})
	return f
}

// createStalled sends a creation of topic and waits until the store holds it.
func (sc *stalledController) createStalled(t *testing.T, topic string) *actor.Future {
	t.Helper()
	f := sc.ask(&messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: topic, Partitions: 1}}}, nil)
	if name := <-sc.store.entered; name != topic {
		t.Fatalf("the store got %q", name)
	}
	return f
}

// The controller's store calls run beside it: while one hangs, a request
// that does not write is answered, and those that write wait for it and
// then run in order, each with its own sender and headers.
func TestControllerServesWhileTheStoreIsSlow(t *testing.T) {
	sc := startStalledController(t)
	ask, release := sc.ask, sc.release
	create := sc.createStalled(t, "slow")
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

// A controller that stops (its lock lost) with a write out answers the
// request it was for and those waiting behind it, instead of leaving
// their senders to time out.
func TestStoppedControllerAnswersWhatWaits(t *testing.T) {
	sc := startStalledController(t)
	create := sc.createStalled(t, "slow")
	remove := sc.ask(&messages.DeleteTopicsRequest{Names: []string{"slow"}}, nil)
	// Answered at once, and after the deletion was taken and deferred.
	if _, err := sc.ask(&messages.ReplicaOfflineRequest{Topic: "other"}, nil).Result(); err != nil {
		t.Fatal(err)
	}
	if err := sc.system.Root.StopFuture(sc.pid).Wait(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	res, err := create.Result()
	if err != nil {
		t.Fatalf("the creation was not answered: %v", err)
	}
	if r := res.(*messages.CreateTopicsResponse).Results[0]; r.Error != messages.ErrorCode_REQUEST_TIMED_OUT {
		t.Fatalf("creation: %v %s", r.Error, r.ErrorMessage)
	}
	res, err = remove.Result()
	if err != nil {
		t.Fatalf("the deferred deletion was not answered: %v", err)
	}
	if r := res.(*messages.DeleteTopicsResponse).Results[0]; r.Error != messages.ErrorCode_NOT_CONTROLLER {
		t.Fatalf("deletion: %v %s", r.Error, r.ErrorMessage)
	}
}

// A controller that fails with a write out is restarted in place: the
// request it was writing for is answered, the step's late outcome is
// not taken for the new controller's, and the new one serves.
func TestRestartedControllerAnswersAndServes(t *testing.T) {
	sc := startStalledController(t)
	create := sc.createStalled(t, "slow")
	// A snapshot-less update makes the controller fail; its supervisor
	// restarts it.
	sc.system.Root.Send(sc.pid, &MetadataUpdated{})
	res, err := create.Result()
	if err != nil {
		t.Fatalf("the creation was not answered: %v", err)
	}
	if r := res.(*messages.CreateTopicsResponse).Results[0]; r.Error != messages.ErrorCode_REQUEST_TIMED_OUT {
		t.Fatalf("creation: %v %s", r.Error, r.ErrorMessage)
	}
	sc.release()
	// What its broker sends a controller that started (it has no parent here).
	sc.system.Root.Send(sc.pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 0, Addr: sc.system.Address()}}})
	res, err = sc.ask(&messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "after", Partitions: 1}}}, nil).Result()
	if err != nil {
		t.Fatalf("the restarted controller does not answer: %v", err)
	}
	if r := res.(*messages.CreateTopicsResponse).Results[0]; r.Error != messages.ErrorCode_NONE {
		t.Fatalf("creation after the restart: %v %s", r.Error, r.ErrorMessage)
	}
}

// A controller that has not yet heard which brokers are live (it has just
// won the election) answers a creation with NOT_CONTROLLER, which clients
// retry, not with INVALID_REPLICATION_FACTOR ("0 are alive"), which they
// do not; once it has heard, the creation goes through.
func TestControllerWithoutLiveBrokersYetAsksForARetry(t *testing.T) {
	sc := newStalledController(t, false)
	sc.release()
	create := func() *messages.TopicResult {
		t.Helper()
		res, err := sc.ask(&messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "early", Partitions: 1}}}, nil).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*messages.CreateTopicsResponse).Results[0]
	}
	if r := create(); r.Error != messages.ErrorCode_NOT_CONTROLLER || !r.Error.Retriable() {
		t.Fatalf("a creation before the live brokers are known: %v %s", r.Error, r.ErrorMessage)
	}
	sc.system.Root.Send(sc.pid, &BrokersUpdated{Brokers: []cluster.Broker{{ID: 0, Addr: sc.system.Address()}}})
	// The store holds it until released; released already, so it goes on.
	go func() { <-sc.store.entered }()
	if r := create(); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("a creation once the live brokers are known: %v %s", r.Error, r.ErrorMessage)
	}
}
