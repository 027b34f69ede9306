package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/transport"
)

// config holds every option; each client type reads the part it needs.
type config struct {
	listen         string
	advertised     string
	sessions       bool
	system         *actor.ActorSystem
	requestTimeout time.Duration
	apiTimeout     time.Duration
	logger         *slog.Logger
	// TLS files and bearer token (security.go).
	tlsCert, tlsKey, tlsCA string
	token                  string

	// producer
	acks            int32
	linger          time.Duration
	compression     record.Codec
	batchBytes      int
	maxRecordBytes  int
	maxBuffered     int64
	maxInFlight     int
	retries         int
	retryBackoff    time.Duration
	deliveryTimeout time.Duration
	maxBlock        time.Duration
	metadataMaxAge  time.Duration
	partitioner     Partitioner
	produceTimeout  time.Duration
	idempotence     *bool // nil: on exactly when acks=all

	// consumer
	partitions    map[string]map[int32]Offset
	fetchMaxBytes int32
	fetchMaxWait  time.Duration
	fetchMinBytes int32
	maxPollBuffer int64
	resetOffset   Offset

	// group consumer
	group groupConfig
	// push subscriber
	pushCredit int
}

func defaultConfig() config {
	return config{
		listen:          "127.0.0.1:0",
		sessions:        true,
		requestTimeout:  30 * time.Second,
		apiTimeout:      time.Minute,
		logger:          slog.Default(),
		acks:            -1,
		linger:          0,
		batchBytes:      1 << 20,
		maxRecordBytes:  1 << 20,
		maxBuffered:     64 << 20,
		maxInFlight:     5,
		retries:         1 << 30,
		retryBackoff:    100 * time.Millisecond,
		deliveryTimeout: 2 * time.Minute,
		maxBlock:        10 * time.Second,
		metadataMaxAge:  5 * time.Minute,
		partitioner:     KafkaPartitioner(),
		produceTimeout:  30 * time.Second,
		fetchMaxBytes:   4 << 20,
		fetchMaxWait:    500 * time.Millisecond,
		fetchMinBytes:   1,
		maxPollBuffer:   64 << 20,
		resetOffset:     AtStart(),
		pushCredit:      100,
		group: groupConfig{clientID: hostname(), assignors: []string{"range"}, sessionTimeout: 10 * time.Second,
			rebalanceTimeout: 30 * time.Second, autoCommitInterval: 5 * time.Second},
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "sluice-client"
	}
	return h
}

// Sessions makes the client's requests and their answers travel over
// connections it opens to the brokers (one per broker), so that no broker
// needs to connect to the client: a client behind NAT, in a container or
// on another host works as one beside the brokers does; push subscribers'
// records come the same way. Default on; Sessions(false) has each broker
// answer and push over a connection it opens back to the client
// (AdvertisedAddr), as a program whose own actors brokers reach directly
// may want.
func Sessions(on bool) Opt { return anyOpt(func(c *config) { c.sessions = on }) }

// ListenAddr is the host:port the client's actor system listens on; brokers
// open a connection back to it to deliver replies. Default 127.0.0.1:0.
func ListenAddr(addr string) Opt { return anyOpt(func(c *config) { c.listen = addr }) }

// AdvertisedAddr is the host:port brokers should use to reach the client,
// when it differs from the listen address.
func AdvertisedAddr(addr string) Opt { return anyOpt(func(c *config) { c.advertised = addr }) }

// WithActorSystem runs the client on an existing actor system whose remote
// is already started, instead of one the client starts.
func WithActorSystem(system *actor.ActorSystem) Opt {
	return anyOpt(func(c *config) { c.system = system })
}

// RequestTimeout bounds each request to a broker. Default 30 s.
func RequestTimeout(d time.Duration) Opt { return anyOpt(func(c *config) { c.requestTimeout = d }) }

// MetadataMaxAge is how old the client's view of a topic may grow before
// its next use refreshes it in the background (Kafka's
// metadata.max.age.ms, default 5 minutes): partitions added to a topic are
// used within about this long.
func MetadataMaxAge(d time.Duration) Opt { return anyOpt(func(c *config) { c.metadataMaxAge = d }) }

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Opt { return anyOpt(func(c *config) { c.logger = l }) }

// node is an actor system shared by the clients of a process that listen on
// the same address. It lives until Shutdown: starting and stopping gRPC
// servers over and over would only cost connections and ports.
type node struct {
	system *actor.ActorSystem
	tn     *transport.Node
}

var (
	nodesMu sync.Mutex
	nodes   = map[string]*node{}
	// nodesBySystem finds the transport of a system, to explain a broker
	// that does not answer (explain).
	nodesBySystem = map[*actor.ActorSystem]*transport.Node{}
	// sessionSystems are the systems whose clients talk to brokers over
	// sessions (Sessions).
	sessionSystems = map[*actor.ActorSystem]bool{}
)

// transportOf returns the transport of a system the package started (nil
// for a program's own).
func transportOf(system *actor.ActorSystem) *transport.Node {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	return nodesBySystem[system]
}

// sessionNode is system's transport when its clients use sessions, else
// nil.
func sessionNode(system *actor.ActorSystem) *transport.Node {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	if !sessionSystems[system] {
		return nil
	}
	return nodesBySystem[system]
}

// brokerPID is where system's clients send a request for the broker at
// addr: its broker actor, or the node's session to it.
func brokerPID(system *actor.ActorSystem, addr string) *actor.PID {
	if tn := sessionNode(system); tn != nil {
		return tn.SessionPID(addr)
	}
	return transport.BrokerPID(addr)
}

// overSession reports whether system's requests to addr travel over a
// session, which ends with the connection (and a push subscriber's
// stand-in on the broker with it).
func overSession(system *actor.ActorSystem, addr string) bool {
	tn := sessionNode(system)
	return tn != nil && tn.UsesSession(addr)
}

func acquireNode(cfg *config) (*node, error) {
	if cfg.system != nil {
		return &node{system: cfg.system}, nil
	}
	nodesMu.Lock()
	defer nodesMu.Unlock()
	sec, err := cfg.security()
	if err != nil {
		return nil, err
	}
	// Clients with other credentials need their own node: the credentials
	// belong to its connections.
	key := strings.Join([]string{cfg.listen, cfg.advertised, cfg.tlsCert, cfg.tlsKey, cfg.tlsCA, cfg.token, strconv.FormatBool(cfg.sessions)}, "|")
	if n, ok := nodes[key]; ok {
		return n, nil
	}
	host, port, err := transport.ParseAddr(cfg.listen)
	if err != nil {
		return nil, err
	}
	tn, err := transport.Start(transport.Config{Host: host, Port: port, AdvertisedAddr: cfg.advertised,
		MaxMessageBytes: max(cfg.batchBytes, cfg.maxRecordBytes, int(cfg.fetchMaxBytes), 16<<20) + (64 << 10), Security: sec,
		AcceptWatches: true}, cfg.logger)
	if err != nil {
		return nil, err
	}
	n := &node{system: tn.System, tn: tn}
	nodes[key] = n
	nodesBySystem[tn.System] = tn
	if cfg.sessions {
		sessionSystems[tn.System] = true
	}
	return n, nil
}

// release is called by a closing client; the node stays for others.
func (n *node) release() {}

// Shutdown stops every actor system the package started. Clients still
// open stop working.
func Shutdown() {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	for key, n := range nodes {
		n.tn.Stop()
		delete(nodes, key)
		delete(nodesBySystem, n.system)
		delete(sessionSystems, n.system)
	}
}

// request sends msg to the broker actor at addr and waits for its answer.
// Transport failures come back as retriable broker codes.
func request(system *actor.ActorSystem, addr string, msg proto.Message, timeout time.Duration) (proto.Message, error) {
	if err := checkPeer(system, addr); err != nil {
		return nil, err
	}
	res, err := reply.Wait(system, brokerPID(system, addr), msg, timeout)
	out, err := decodeResult(addr, res, err)
	switch {
	case errors.Is(err, messages.ErrorCode_BROKER_NOT_AVAILABLE):
		err = explain(system, addr, err)
	case errors.Is(err, messages.ErrorCode_REQUEST_TIMED_OUT):
		err = &messages.Error{Code: messages.ErrorCode_REQUEST_TIMED_OUT, Message: silence(system, addr, timeout)}
	}
	noteAnswer(addr, err)
	return out, err
}

// failedAt holds, for the whole process, the addresses whose last request
// got no answer, and when: requests that may go to any broker try them
// last for a minute, so a dead or silent broker among the bootstrap
// addresses costs one timeout, not one per request.
var failedAt sync.Map // addr -> time.Time

const failedAddrMemory = time.Minute

func noteAnswer(addr string, err error) {
	switch {
	case err == nil:
		failedAt.Delete(addr)
	case isNotListening(err), errors.Is(err, messages.ErrorCode_REQUEST_TIMED_OUT), errors.Is(err, messages.ErrorCode_BROKER_NOT_AVAILABLE):
		failedAt.Store(addr, time.Now())
	}
}

// recentlyFailed reports whether addr's last request got no answer within
// the last minute.
func recentlyFailed(addr string) bool {
	at, ok := failedAt.Load(addr)
	return ok && time.Since(at.(time.Time)) < failedAddrMemory
}

// peerChecks remembers, per node, the brokers whose handshake and
// authentication have been seen to work.
var peerChecks sync.Map // peerKey -> struct{}

type peerKey struct {
	system *actor.ActorSystem
	addr   string
}

// checkPeer tries the connection (TLS handshake and authentication, or a
// plaintext one) with addr before this node's first request to it: the
// transport would only drop the connection, and the request wait for its
// timeout, if the broker refused the client's certificate or token, the
// client the broker's, or a plaintext client met a broker with TLS.
func checkPeer(system *actor.ActorSystem, addr string) error {
	key := peerKey{system, addr}
	if _, ok := peerChecks.Load(key); ok {
		return nil
	}
	if err := dialCheck(addr); err != nil {
		noteAnswer(addr, err)
		return err
	}
	err := probe(system, addr)
	switch {
	case errors.Is(err, transport.ErrAuthentication):
		return &messages.Error{Code: messages.ErrorCode_SASL_AUTHENTICATION_FAILED, Message: err.Error()}
	case errors.Is(err, transport.ErrNotSluice), errors.Is(err, transport.ErrNoAnswer):
		// Another service, or silence: as hopeless as a refused
		// connection, and known in seconds where a request would wait
		// for its timeout.
		nl := notListening{err: &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE, Message: err.Error()}}
		noteAnswer(addr, nl)
		return nl
	case err == nil:
		if err := checkAnswers(system, addr); err != nil {
			noteAnswer(addr, err)
			return err
		}
		peerChecks.Store(key, struct{}{})
	}
	// Unreachable: the request reports it.
	return nil
}

// answerWait bounds checkAnswers: a broker that took the connection and
// passed the probe answers a WhoAmIRequest in milliseconds.
const answerWait = 5 * time.Second

// checkAnswers asks the broker at addr a question any client may ask: the
// probe saw it serve, so silence means its answers cannot come back (it
// answers over a connection it opens to the address this client
// announces), which a user should hear in seconds, not after every
// request's timeout. Only for a node the package started: a program's own
// actor system is its own to set up.
func checkAnswers(system *actor.ActorSystem, addr string) error {
	tn := transportOf(system)
	if tn == nil {
		return nil
	}
	// Any answer, a refusal included, came back: only silence counts.
	if _, err := reply.Wait(system, brokerPID(system, addr), &messages.WhoAmIRequest{}, answerWait); err == actor.ErrTimeout {
		return notListening{err: &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE,
			Message: fmt.Sprintf("the broker at %s took this client's connection but its answers do not come back within %v: "+
				"brokers answer over a connection they open to this client at %s, which they cannot reach "+
				"(set ListenAddr and AdvertisedAddr to an address brokers can connect to)", addr, answerWait, tn.Addr)}}
	}
	return nil
}

// dialTimeout bounds dialCheck.
const dialTimeout = 2 * time.Second

// dialCheck opens (and closes) a TCP connection to addr: a refused
// connection is known in milliseconds, where a request would wait for its
// timeout.
func dialCheck(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err == nil {
		conn.Close()
		return nil
	}
	var ne net.Error
	why := err.Error()
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "connection refused"
	case errors.As(err, &ne) && ne.Timeout():
		why = fmt.Sprintf("no answer to a connection within %v", dialTimeout)
	}
	return notListening{err: &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE, Message: fmt.Sprintf("no broker at %s (%s)", addr, why)}}
}

// notListening is a BROKER_NOT_AVAILABLE for an address where nothing
// accepts connections: when every known address says so, the cluster is
// down (or the address wrong), and waiting out a timeout tells the user
// nothing more.
type notListening struct{ err *messages.Error }

func (e notListening) Error() string { return e.err.Error() }
func (e notListening) Unwrap() error { return e.err }

// Is makes it an ErrNoBrokers too.
func (e notListening) Is(target error) bool { return target == ErrNoBrokers }

func isNotListening(err error) bool {
	var nl notListening
	return errors.As(err, &nl)
}

// telling picks the error to report after trying one more address: a
// broker that answered wrongly says more than an address where nothing
// listens, so the result is a notListening only when every address was one.
func telling(last, err error) error {
	if last == ErrNoBrokers || isNotListening(last) || !isNotListening(err) {
		return err
	}
	return last
}

// explain turns an unreachable broker into the reason when the probe finds
// one: a plaintext client at a broker that requires TLS, or a certificate
// or token refused since the last check.
func explain(system *actor.ActorSystem, addr string, err error) error {
	if perr := probe(system, addr); errors.Is(perr, transport.ErrAuthentication) {
		peerChecks.Delete(peerKey{system, addr})
		return &messages.Error{Code: messages.ErrorCode_SASL_AUTHENTICATION_FAILED, Message: perr.Error()}
	}
	return err
}

// probe runs the transport's Probe from system's node (nil for a system
// the package did not start: it has no node to probe with).
func probe(system *actor.ActorSystem, addr string) error {
	tn := transportOf(system)
	if tn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return tn.Probe(ctx, addr)
}

// silence says what a request without an answer may mean. The broker
// accepted the connection (checkPeer saw to it), so either it is too busy
// or paused to answer, or its answer cannot reach this client: brokers
// answer over a connection they open to the address the client announces.
func silence(system *actor.ActorSystem, addr string, timeout time.Duration) string {
	tn := transportOf(system)
	if tn == nil {
		return fmt.Sprintf("no answer from %s within %v", addr, timeout.Round(time.Millisecond))
	}
	return fmt.Sprintf("no answer from %s within %v: the broker is busy or paused, or cannot connect back to this client at %s (see ListenAddr and AdvertisedAddr)",
		addr, timeout.Round(time.Millisecond), tn.Addr)
}

// brokerLost tells a client's actor that the transport lost its
// connection to the broker at addr: a request in flight there gets no
// answer, and would otherwise wait out its timeout.
type brokerLost struct{ addr string }

// errConnectionLost settles a request in flight to a broker whose
// connection broke; decodeResult makes it BROKER_NOT_AVAILABLE.
var errConnectionLost = errors.New("connection lost")

// watchLostBrokers sends the actor of ctx a brokerLost for each
// connection the transport loses, until it unsubscribes.
func watchLostBrokers(ctx actor.Context) *eventstream.Subscription {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	return ctx.ActorSystem().EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
			root.Send(self, brokerLost{addr: e.Address})
		}
	})
}

// decodeResult turns a future's outcome into a response or an error.
func decodeResult(addr string, res any, err error) (proto.Message, error) {
	if err != nil {
		switch {
		case err == actor.ErrTimeout:
			return nil, &messages.Error{Code: messages.ErrorCode_REQUEST_TIMED_OUT, Message: fmt.Sprintf("no answer from %s", addr)}
		case errors.Is(err, errConnectionLost):
			return nil, &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE, Message: fmt.Sprintf("lost the connection to the broker at %s", addr)}
		}
		// protoactor's own words (a dead letter, a future) mean nothing to
		// a user: the request did not reach a broker.
		return nil, &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE, Message: fmt.Sprintf("broker at %s is not reachable", addr)}
	}
	switch m := res.(type) {
	case *actor.DeadLetterResponse:
		return nil, &messages.Error{Code: messages.ErrorCode_BROKER_NOT_AVAILABLE, Message: fmt.Sprintf("broker at %s is not reachable", addr)}
	case *messages.ErrorResponse:
		return nil, &messages.Error{Code: m.Error, Message: m.Message}
	case proto.Message:
		return m, nil
	}
	return nil, &messages.Error{Code: messages.ErrorCode_UNKNOWN_SERVER_ERROR, Message: fmt.Sprintf("unexpected answer %T from %s", res, addr)}
}
