package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// MaxFrameBytes bounds one gRPC message, which carries one actor message
// (endpointBatchSize); a larger one would drop the whole connection.
const MaxFrameBytes = 256 << 20

// HTTP/2 flow-control window and socket buffer sizes of every connection.
const (
	windowBytes = 64 << 20
	bufferBytes = 1 << 20
)

// Config says where a node listens and how large its messages get.
type Config struct {
	// Host and Port to listen on; Port 0 picks a free port.
	Host string
	Port int
	// AdvertisedAddr, when set, is the host:port peers use to reach this node.
	AdvertisedAddr string
	// MaxMessageBytes is the largest single message this node sends
	// (a produce request or fetch response). Default 8 MiB.
	MaxMessageBytes int
	// LogLevel for protoactor's own logging. Default: silent, since it
	// reports every closed connection (a client going away) as an error.
	LogLevel *slog.Level
}

// Node is a running actor system with its remote endpoint.
type Node struct {
	System *actor.ActorSystem
	Remote *remote.Remote
	// Addr is the address peers reach this node at.
	Addr string
	// Guard counts what the stream guard refused from other processes.
	Guard *GuardStats
}

// ParseAddr splits "host:port" for Config.
func ParseAddr(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: bad port", addr)
	}
	return host, port, nil
}

// NewSystem creates an actor system that logs through logger.
func NewSystem(logger *slog.Logger, level slog.Level) *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(system *actor.ActorSystem) *slog.Logger {
		return slog.New(levelHandler{level: level, Handler: logger.Handler()}).With("lib", "protoactor")
	}))
}

// endpointBatchSize is how many messages the remote packs into one gRPC
// message: one. The receiver decodes a whole gRPC message before it
// delivers any of it, so a batch of multi-MiB produce requests would make
// the first wait for the last; one message per gRPC message lets a broker
// work on a request while the next is still in transit (about 10% more
// produce throughput with 1 MiB requests on 2 cores). Sluice's messages
// are few and large (records travel in batches), so per-message framing
// costs little.
const endpointBatchSize = 1

// Start creates an actor system and starts its remote endpoint.
func Start(cfg Config, logger *slog.Logger) (node *Node, err error) {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 8 << 20
	}
	if cfg.MaxMessageBytes > MaxFrameBytes-(64<<10) {
		return nil, fmt.Errorf("max message bytes %d exceeds the transport limit %d", cfg.MaxMessageBytes, MaxFrameBytes-(64<<10))
	}
	level := slog.LevelError + 4
	if cfg.LogLevel != nil {
		level = *cfg.LogLevel
	}
	system := NewSystem(logger, level)
	stats := &GuardStats{}
	opts := []remote.ConfigOption{
		remote.WithEndpointWriterBatchSize(endpointBatchSize),
		// The writer's queue starts this small and doubles when full; the
		// default preallocates a million slots (16 MiB of pointers) per
		// peer, which every garbage collection then scans.
		remote.WithEndpointWriterQueueSize(1024),
		remote.WithServerOptions(
			grpc.MaxRecvMsgSize(MaxFrameBytes),
			grpc.MaxSendMsgSize(MaxFrameBytes),
			// One stream carries every message between two nodes; a large
			// static flow-control window keeps multi-MiB batches flowing
			// without waiting for window updates.
			grpc.InitialWindowSize(windowBytes),
			grpc.InitialConnWindowSize(windowBytes),
			grpc.ReadBufferSize(bufferBytes),
			grpc.WriteBufferSize(bufferBytes),
			grpc.RecvBufferPool(grpc.NewSharedBufferPool()),
			grpc.StreamInterceptor(guardStream(logger, stats)),
			grpc.UnaryInterceptor(guardUnary),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		),
		remote.WithDialOptions(
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxFrameBytes), grpc.MaxCallSendMsgSize(MaxFrameBytes)),
			grpc.WithInitialWindowSize(windowBytes),
			grpc.WithInitialConnWindowSize(windowBytes),
			grpc.WithReadBufferSize(bufferBytes),
			grpc.WithWriteBufferSize(bufferBytes),
			grpc.WithRecvBufferPool(grpc.NewSharedBufferPool()),
			// Notice a dead or paused peer within seconds, so that requests to it
			// fail fast instead of queueing behind a stuck stream.
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 5 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
		),
	}
	if cfg.AdvertisedAddr != "" {
		opts = append(opts, remote.WithAdvertisedHost(cfg.AdvertisedAddr))
	}
	rcfg := remote.Configure(cfg.Host, cfg.Port, opts...)
	// A failed connection attempt blocks the endpoint writer for 2 s per
	// retry; with one attempt, messages to a dead peer fail fast.
	rcfg.MaxRetryCount = 1
	r := remote.NewRemote(system, rcfg)
	// remote.Start panics when it cannot listen; report that as an error.
	defer func() {
		if p := recover(); p != nil {
			node, err = nil, fmt.Errorf("transport: %v", p)
		}
	}()
	r.Start()
	return &Node{System: system, Remote: r, Addr: system.Address(), Guard: stats}, nil
}

// Stop shuts the remote endpoint and the actor system down.
func (n *Node) Stop() {
	n.Remote.Shutdown(true)
	n.System.Shutdown()
}

// levelHandler filters records below level.
type levelHandler struct {
	level slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{level: h.level, Handler: h.Handler.WithAttrs(attrs)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{level: h.level, Handler: h.Handler.WithGroup(name)}
}
