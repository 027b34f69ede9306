package transport

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// protoSerializerID is protoactor's protobuf serializer, the only one we accept.
const protoSerializerID = 0

// PeerHeader is the message header the guard puts on every envelope that
// arrives from the network: the TCP address of the connection it came on.
// Whatever headers the sender wrote are dropped first, so an actor can tell
// a message from another process (the header is set) from one sent inside
// its own process (it is not), whatever the sender PID claims.
const PeerHeader = "sluice-peer"

// FromNetwork reports whether the current message of ctx came from another
// process through the guard.
func FromNetwork(ctx actor.Context) bool { return ctx.MessageHeader().Get(PeerHeader) != "" }

var invalidMessageName = string(proto.MessageName(&messages.InvalidMessage{}))

var produceRequestName = string(proto.MessageName(&messages.ProduceRequest{}))

// sluicePackage is the protobuf package of every Sluice message.
const sluicePackage protoreflect.FullName = "sluice"

// System messages of protoactor that Sluice's own features need from other
// processes: remote watches (a broker's pusher watching a push
// subscriber's actor on a client node) and their Terminated, and the
// dead-letter answer to a request whose target does not exist. Every other
// protoactor type (Stop, PoisonPill, Touch, remote activation, ...) is
// refused.
var allowedSystemTypes = map[string]func(data []byte, target *actor.PID, o Origin) string{
	"actor.Watch": func(data []byte, target *actor.PID, o Origin) string {
		var m actor.Watch
		if err := proto.Unmarshal(data, &m); err != nil {
			return err.Error()
		}
		if !o.AcceptWatches && !strings.HasPrefix(target.Id, sessionTargetPrefix) {
			// Each watch is kept until its watcher's node goes away: a
			// peer could grow them without bound, and no Sluice feature
			// watches a broker's actors from another node but a session's
			// push subscriber (a coordinator on another broker does).
			return "this node's actors are not watched from other nodes"
		}
		if reason := checkPeerPID("watcher", m.Watcher, o); reason != "" {
			return reason
		}
		if o.WatchesLeft != nil {
			if *o.WatchesLeft <= 0 {
				return fmt.Sprintf("more than %d watches from one connection", MaxWatchesPerConn)
			}
			*o.WatchesLeft--
		}
		return ""
	},
	"actor.Unwatch": func(data []byte, target *actor.PID, o Origin) string {
		var m actor.Unwatch
		if err := proto.Unmarshal(data, &m); err != nil {
			return err.Error()
		}
		if !o.AcceptWatches && !strings.HasPrefix(target.Id, sessionTargetPrefix) {
			return "this node's actors are not watched from other nodes"
		}
		return checkPeerPID("watcher", m.Watcher, o)
	},
	"actor.Terminated": func(data []byte, target *actor.PID, o Origin) string {
		var m actor.Terminated
		if err := proto.Unmarshal(data, &m); err != nil {
			return err.Error()
		}
		if reason := checkPeerPID("terminated actor", m.Who, o); reason != "" {
			return reason
		}
		// The end of an actor matters only to an actor of this node that
		// watches it; any other Terminated is a forgery (protoactor would
		// also drop the target's child of that name, if it had one).
		if o.Watched == nil || !o.Watched(target.Id, m.Who) {
			return fmt.Sprintf("%s does not watch %s", target.Id, m.Who.Id)
		}
		return ""
	},
	"actor.DeadLetterResponse": func(data []byte, _ *actor.PID, _ Origin) string {
		var m actor.DeadLetterResponse
		if err := proto.Unmarshal(data, &m); err != nil {
			return err.Error()
		}
		return ""
	},
}

// MaxWatchesPerConn bounds the Watch messages one connection may send to a
// node that accepts them: a broker watches one actor per push subscription
// it serves to that client.
const MaxWatchesPerConn = 1024

// checkPeerPID accepts a PID of an actor on the sending node itself: a
// node only reports on (or watches from) its own actors. protoactor
// dereferences these PIDs and connects to their address.
func checkPeerPID(what string, pid *actor.PID, o Origin) string {
	switch {
	case pid == nil || pid.Id == "" || pid.Address == "":
		return what + " is missing"
	case o.Address == "":
		return "the connection has not said which node it is"
	case pid.Address != o.Address:
		return fmt.Sprintf("%s is on %s, not on the sending node %s", what, pid.Address, o.Address)
	case isLocalAddress(pid.Address, o.Local):
		return fmt.Sprintf("%s is on this node", what)
	}
	return ""
}

// isLocalAddress reports whether protoactor resolves addr to this node's
// own actors: its address, or the "nonhost" of a system without a remote.
func isLocalAddress(addr, local string) bool {
	return addr == "nonhost" || (local != "" && addr == local)
}

// Origin is what the guard knows of the connection a batch came on.
type Origin struct {
	// Peer is the TCP address of the connection.
	Peer string
	// Address is the actor-system address the peer gave in its
	// ConnectRequest ("" until it did).
	Address string
	// Principal the connection authenticated as (AnonymousPrincipal
	// without TLS).
	Principal string
	// Restricted is set for a client's connection to a broker with TLS: it
	// may address only the broker actor of this node (and its member's
	// pusher with credit and acks), and answers go only to its own node.
	Restricted bool
	// Local is this node's own address, which every target of a batch is
	// given ("" while the node starts).
	Local string
	// AcceptWatches: this node's actors may be watched from the peer (a
	// client node, whose push subscribers a broker watches).
	AcceptWatches bool
	// WatchesLeft is how many more Watch messages the connection may send
	// (nil: no bound); SanitizeBatch counts it down.
	WatchesLeft *int
	// Watched reports whether the actor watcherID of this node watches
	// who; a Terminated from the peer is delivered only then.
	Watched func(watcherID string, who *actor.PID) bool
}

// clientTargetTypes are the messages a restricted connection may send to
// an actor other than the broker actor: what a push subscriber answers its
// pusher (which checks the principal), the end of a watched actor, and the
// answer to a request sent to an actor that is gone.
var clientTargetTypes = map[string]bool{
	string(proto.MessageName(&messages.PushCredit{})): true,
	string(proto.MessageName(&messages.PushAck{})):    true,
	"actor.Terminated":         true,
	"actor.DeadLetterResponse": true,
}

// GuardStats counts what the guard refused, for every stream of a node.
type GuardStats struct {
	silent          atomic.Int64
	impostors       atomic.Int64
	unproven        atomic.Int64
	replaced        atomic.Int64
	closed          atomic.Int64
	unauthenticated atomic.Int64
	lastLog         atomic.Int64 // UnixNano of the last warning
}

// Unauthenticated is how many streams were refused for their credentials.
func (s *GuardStats) Unauthenticated() int64 { return s.unauthenticated.Load() }

// Silent is how many connections were closed for sending no
// ConnectRequest in time.
func (s *GuardStats) Silent() int64 { return s.silent.Load() }

// Impostors is how many streams were closed because their peer announced
// this node's own address.
func (s *GuardStats) Impostors() int64 { return s.impostors.Load() }

// Unproven is how many client streams were closed because the listener
// they announced did not prove their principal.
func (s *GuardStats) Unproven() int64 { return s.unproven.Load() }

// Replaced is how many envelopes were replaced by an InvalidMessage.
func (s *GuardStats) Replaced() int64 { return s.replaced.Load() }

// ClosedStreams is how many streams were closed for a malformed batch.
func (s *GuardStats) ClosedStreams() int64 { return s.closed.Load() }

// warnEvery spaces the guard's warnings: a hostile peer must not be able to
// flood the log.
const warnEvery = time.Second

func (s *GuardStats) shouldLog() bool {
	now, last := time.Now().UnixNano(), s.lastLog.Load()
	return now-last >= int64(warnEvery) && s.lastLog.CompareAndSwap(last, now)
}

// guard checks every incoming remote stream: who it is from (the TLS
// certificate or bearer token) and, through guardedStream, each batch.
type guard struct {
	logger *slog.Logger
	stats  *GuardStats
	tls    *tlsState // nil: plaintext
	// local is the node's address, known once the remote has started
	// (before it serves any stream).
	local atomic.Pointer[string]
	// acceptWatches: see Origin.AcceptWatches.
	acceptWatches bool
	// watches are the remote actors this node's actors watch.
	watches *remoteWatches
	// closeConn closes the connection from a remote address (the
	// listener's limiter); nil in tests.
	closeConn func(remote string)
	// prove checks a client's announced listener (tlsState.proveListener;
	// tests replace it).
	prove func(ctx context.Context, addr, principal string, ephemeral *x509.Certificate) error
	// budget and system: see holdUntilTaken (budget nil: not counted).
	budget *budget.Budget
	system *actor.ActorSystem
}

// authenticate returns the principal of the stream's connection and, for a
// token client, the self-signed certificate to pin its reply listener to.
func (g *guard) authenticate(ctx context.Context) (string, *x509.Certificate, error) {
	if g.tls == nil {
		return AnonymousPrincipal, nil, nil
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", nil, errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return "", nil, errors.New("the connection is not TLS")
	}
	certs := info.State.PeerCertificates
	kind, err := g.tls.classifyClient(certs)
	if err != nil {
		return "", nil, err
	}
	if kind == peerCertified {
		return CertPrincipal(certs[0]), nil, nil
	}
	token := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) == 1 {
			token, _ = strings.CutPrefix(v[0], "Bearer ")
		}
	}
	switch {
	case token == "":
		return "", nil, errors.New("the connection has neither a certificate from the cluster CA nor a token")
	case g.tls.sec.Authenticate == nil:
		return "", nil, errors.New("this node does not accept tokens")
	}
	principal, ok := g.tls.sec.Authenticate(token)
	if !ok {
		return "", nil, errors.New("the token is not valid")
	}
	return principal, certs[0], nil
}

// stream wraps every incoming remote stream so that each received
// MessageBatch is checked before protoactor's endpoint reader sees it.
// protoactor indexes arrays and dereferences type lookups from the batch
// without checks, and hands system messages (Stop, PoisonPill) straight
// to their target; a bad envelope would panic the process or stop an actor.
func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	gs := &guardedStream{ServerStream: ss, logger: g.logger, stats: g.stats, tls: g.tls, prove: g.prove, budget: g.budget, system: g.system}
	if gs.prove == nil && g.tls != nil {
		gs.prove = g.tls.proveListener
	}
	if p, ok := peer.FromContext(ss.Context()); ok && p.Addr != nil {
		gs.origin.Peer = p.Addr.String()
	}
	if gs.origin.Peer == "" {
		gs.origin.Peer = "unknown"
	}
	principal, cert, err := g.authenticate(ss.Context())
	if err != nil {
		g.stats.unauthenticated.Add(1)
		if g.stats.shouldLog() {
			g.logger.Warn("refused a connection that did not authenticate", "peer", gs.origin.Peer, "error", err,
				"refused_total", g.stats.Unauthenticated())
		}
		return status.Error(codes.Unauthenticated, err.Error())
	}
	gs.origin.Principal = principal
	gs.origin.Restricted = g.tls != nil && g.tls.sec.Role == RoleBroker && !IsBrokerPrincipal(principal)
	if info.FullMethod == SessionMethod {
		// A client session: a client's rights whatever its credentials,
		// and answers only on the stream itself.
		gs.session, gs.origin.Restricted = true, true
	}
	if l := g.local.Load(); l != nil {
		gs.origin.Local = *l
	}
	gs.origin.AcceptWatches = g.acceptWatches
	left := MaxWatchesPerConn
	gs.origin.WatchesLeft = &left
	gs.origin.Watched = g.watches.watches
	if gs.session {
		// A session reports the end of its client's subscribers
		// (session_push.go), the only actors its Terminated may name.
		gs.origin.Watched = func(_ string, who *actor.PID) bool { return who.Address == sessionAddress }
	}
	gs.ephemeral = cert
	defer gs.unpin()
	if g.closeConn != nil {
		// A stream that never says which node it is holds its connection
		// for nothing.
		timer := time.AfterFunc(connectTimeout, func() {
			if gs.connected.Load() {
				return
			}
			g.stats.silent.Add(1)
			if g.stats.shouldLog() {
				g.logger.Warn("closed a connection that sent no ConnectRequest", "peer", gs.origin.Peer, "after", connectTimeout,
					"closed_total", g.stats.Silent())
			}
			g.closeConn(gs.origin.Peer)
		})
		defer timer.Stop()
	}
	return handler(srv, gs)
}

// unary refuses the remote's unary diagnostics calls, which panic in this
// protoactor version; a connection that does not authenticate hears so
// first, which lets a client find out why a broker ignores it (Probe).
func (g *guard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if _, _, err := g.authenticate(ctx); err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return nil, status.Errorf(codes.Unimplemented, "%s is not served", info.FullMethod)
}

type guardedStream struct {
	grpc.ServerStream
	logger *slog.Logger
	stats  *GuardStats
	budget *budget.Budget
	system *actor.ActorSystem
	origin Origin
	tls    *tlsState
	// ephemeral is a token client's certificate, pinned to the address it
	// announced while the stream lasts.
	ephemeral *x509.Certificate
	pinnedTo  string
	prove     func(ctx context.Context, addr, principal string, ephemeral *x509.Certificate) error
	// connected is set once the ConnectRequest came.
	connected atomic.Bool
	// session: the stream is a client session (SessionMethod), whose
	// senders are all on sessionAddress.
	session bool
}

func (s *guardedStream) unpin() {
	if s.pinnedTo != "" {
		s.tls.unpin(s.pinnedTo, s.ephemeral)
	}
}

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	rm, ok := m.(*remote.RemoteMessage)
	if !ok {
		return nil
	}
	if c := rm.GetConnectRequest(); c != nil {
		s.connected.Store(true)
		if s.session {
			s.origin.Address = sessionAddress
			return nil
		}
		if sc := c.GetServerConnection(); sc != nil && s.origin.Address == "" {
			if isLocalAddress(sc.Address, s.origin.Local) {
				// Its messages would pass for this node's own: a
				// Terminated naming one of its actors, a sender to
				// answer to itself.
				s.stats.impostors.Add(1)
				if s.stats.shouldLog() {
					s.logger.Warn("closed a connection whose peer claims to be this node", "peer", s.origin.Peer,
						"announced", sc.Address, "impostors_total", s.stats.Impostors())
				}
				return status.Errorf(codes.PermissionDenied, "the address %q is this node's", sc.Address)
			}
			if s.origin.Restricted {
				// Answers go to the announced address: it must be this
				// client's own listener.
				if err := s.prove(s.Context(), sc.Address, s.origin.Principal, s.ephemeral); err != nil {
					s.stats.unproven.Add(1)
					if s.stats.shouldLog() {
						s.logger.Warn("closed a client connection whose announced address is not its own", "peer", s.origin.Peer,
							"principal", s.origin.Principal, "error", err, "unproven_total", s.stats.Unproven())
					}
					return status.Error(codes.PermissionDenied, err.Error())
				}
			}
			s.origin.Address = sc.Address
			if s.ephemeral != nil && sc.Address != "" {
				s.tls.pin(sc.Address, s.ephemeral)
				s.pinnedTo = sc.Address
			}
		}
		return nil
	}
	batch := rm.GetMessageBatch()
	if batch == nil {
		return nil
	}
	replaced, err := SanitizeBatch(batch, s.origin)
	if err != nil {
		s.stats.closed.Add(1)
		if s.stats.shouldLog() {
			s.logger.Warn("closing remote stream with a malformed message batch", "peer", s.origin.Peer, "error", err,
				"closed_streams", s.stats.ClosedStreams())
		}
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if replaced > 0 {
		s.stats.replaced.Add(int64(replaced))
		if s.stats.shouldLog() {
			s.logger.Warn("refused remote messages", "peer", s.origin.Peer, "node", s.origin.Address,
				"count", replaced, "refused_total", s.stats.Replaced())
		}
	}
	return s.holdUntilTaken(batch)
}

// takenTimeout bounds how long a produce request without a sender holds
// its bytes when no answer comes (the broker stopped, say).
const takenTimeout = 30 * time.Second

// askOverhead is what a counted request holds besides its bytes: its
// reply address and the broker's bookkeeping.
const askOverhead = 1 << 10

// holdUntilTaken counts each produce request of batch that has no sender
// (an acks=0 produce, which nothing answers) in the budget, waiting for
// room first: the stream reads its next batch only then, so a flood of
// them waits for the partitions instead of piling up in the broker's
// mailboxes. Each gets a reply address of its own as its sender; the
// partition's answer (a leader tells a sender that asks once it has
// written the batch; every refusal is an answer too), or the timeout,
// gives the bytes back.
func (s *guardedStream) holdUntilTaken(b *remote.MessageBatch) error {
	if s.budget == nil {
		return nil
	}
	produce := int32(-1)
	for i, name := range b.TypeNames {
		if name == produceRequestName {
			produce = int32(i)
		}
	}
	if produce < 0 {
		return nil
	}
	source := s.origin.Peer
	if host, _, err := net.SplitHostPort(source); err == nil {
		source = host
	}
	for _, env := range b.Envelopes {
		if env.TypeId != produce || env.Sender != 0 {
			continue
		}
		n := int64(len(env.MessageData) + askOverhead)
		if err := s.budget.Acquire(s.Context(), source, n); err != nil {
			return status.Error(codes.Canceled, err.Error())
		}
		budget := s.budget
		pid := reply.OnAnswer(s.system, takenTimeout, func(any, error) { budget.Release(source, n) })
		b.Senders = append(b.Senders, pid)
		env.Sender = int32(len(b.Senders))
	}
	return nil
}

// ErrMalformedBatch is returned for a batch whose structure cannot be
// repaired (targets or senders out of range).
var ErrMalformedBatch = errors.New("malformed message batch")

// SanitizeBatch checks every envelope of b, which arrived on a connection
// from origin, in place:
//   - envelopes whose type is not a Sluice message or one of the few
//     protoactor system messages Sluice needs (with valid PIDs of the
//     sending node), or whose bytes cannot be decoded, are replaced by a
//     messages.InvalidMessage addressed to the same target, so the target
//     can answer with an error;
//   - every envelope's headers are replaced by PeerHeader = origin.Peer
//     and PrincipalHeader = origin.Principal (AnonymousPrincipal if empty);
//   - for a Restricted origin, envelopes to other actors than the broker
//     actor (but for what a push subscriber sends its pusher), and senders
//     on other nodes than the origin's, are refused.
//
// It returns how many envelopes it replaced, or an error for a batch that
// cannot be delivered at all.
func SanitizeBatch(b *remote.MessageBatch, origin Origin) (replaced int, err error) {
	if origin.Principal == "" {
		// "" means "from this process": never for a network message.
		origin.Principal = AnonymousPrincipal
	}
	if origin.Local != "" {
		for _, target := range b.Targets {
			if target != nil && target.Address != origin.Local {
				// protoactor would pass a message for another address on
				// over this node's own connection, as this node (to itself,
				// when the peer dialed it by another name: localhost for
				// 127.0.0.1). It dialed this node: this node is the one it
				// addresses.
				target.Address = origin.Local
			}
		}
	}
	invalidID := int32(-1)
	for i, env := range b.Envelopes {
		if env == nil {
			return replaced, fmt.Errorf("%w: envelope %d is empty", ErrMalformedBatch, i)
		}
		if env.Target < 0 || int(env.Target) >= len(b.Targets) || b.Targets[env.Target] == nil {
			return replaced, fmt.Errorf("%w: envelope %d targets index %d of %d", ErrMalformedBatch, i, env.Target, len(b.Targets))
		}
		if env.Sender < 0 || int(env.Sender) > len(b.Senders) || (env.Sender > 0 && b.Senders[env.Sender-1] == nil) {
			return replaced, fmt.Errorf("%w: envelope %d has sender index %d of %d", ErrMalformedBatch, i, env.Sender, len(b.Senders))
		}
		// One map per envelope: actors may add headers to the one they got.
		env.MessageHeader = &remote.MessageHeader{HeaderData: map[string]string{PeerHeader: origin.Peer, PrincipalHeader: origin.Principal}}
		typeName, reason, code := checkEnvelope(b, env, origin)
		if origin.Restricted {
			// Checked whatever checkEnvelope found: it also drops a sender
			// elsewhere, which a refused envelope must not be answered to.
			if why := checkRestricted(b, env, typeName, origin); why != "" && reason == "" {
				reason, code = why, messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED
			}
		}
		if reason == "" {
			continue
		}
		if invalidID < 0 {
			invalidID = int32(len(b.TypeNames))
			b.TypeNames = append(b.TypeNames, invalidMessageName)
		}
		// The names come from the peer: a string that is not UTF-8 would
		// make the replacement itself undecodable.
		data, _ := proto.Marshal(&messages.InvalidMessage{TypeName: strings.ToValidUTF8(typeName, "?"),
			Reason: strings.ToValidUTF8(reason, "?"), Error: code})
		env.TypeId = invalidID
		env.SerializerId = protoSerializerID
		env.MessageData = data
		replaced++
	}
	return replaced, nil
}

// checkRestricted applies a client connection's limits to an envelope: it
// may address the broker actor, or send a pusher what a subscriber sends,
// and any answer goes to its own node. A sender elsewhere is dropped so
// that nothing answers a refused envelope.
func checkRestricted(b *remote.MessageBatch, env *remote.MessageEnvelope, typeName string, origin Origin) string {
	if env.Sender > 0 {
		if s := b.Senders[env.Sender-1]; s.Address != origin.Address || origin.Address == "" {
			env.Sender = 0
			return fmt.Sprintf("sender %s is not on the sending node %q", s.Address, origin.Address)
		}
	}
	target := b.Targets[env.Target]
	if origin.Local == "" {
		return "the node is starting"
	}
	if target.Id != BrokerActorName && !clientTargetTypes[typeName] {
		return fmt.Sprintf("%s may address only the broker actor, not %q", origin.Principal, target.Id)
	}
	return ""
}

// checkEnvelope returns the envelope's type name and, when it must not be
// delivered, the reason and its error code.
func checkEnvelope(b *remote.MessageBatch, env *remote.MessageEnvelope, origin Origin) (string, string, messages.ErrorCode) {
	const unknown = messages.ErrorCode_UNKNOWN_MESSAGE_TYPE
	if env.TypeId < 0 || int(env.TypeId) >= len(b.TypeNames) {
		return "", fmt.Sprintf("type id %d out of range", env.TypeId), unknown
	}
	name := b.TypeNames[env.TypeId]
	if env.SerializerId != protoSerializerID {
		return name, fmt.Sprintf("serializer %d is not accepted", env.SerializerId), unknown
	}
	if check, ok := allowedSystemTypes[name]; ok {
		return name, check(env.MessageData, b.Targets[env.Target], origin), unknown
	}
	full := protoreflect.FullName(name)
	if !full.IsValid() || full.Parent() != sluicePackage {
		return name, "not a Sluice message type", unknown
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(full)
	if err != nil {
		return name, "unknown message type", unknown
	}
	if err := checkWire(mt.Descriptor(), env.MessageData, 0); err != nil {
		return name, err.Error(), messages.ErrorCode_CORRUPT_RECORD
	}
	return name, "", messages.ErrorCode_NONE
}

// checkPacked checks the values of a packed repeated scalar field.
func checkPacked(kind protoreflect.Kind, v []byte) error {
	var size int
	switch kind {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		size = 4
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		size = 8
	}
	if size > 0 {
		if len(v)%size != 0 {
			return errors.New("packed values of the wrong length")
		}
		return nil
	}
	for len(v) > 0 {
		_, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return fmt.Errorf("bad packed varint: %v", protowire.ParseError(n))
		}
		v = v[n:]
	}
	return nil
}

// maxNesting bounds how deep checkWire follows nested messages.
const maxNesting = 32

// checkWire walks the protobuf encoding of a message of type md without
// allocating: framing errors and string fields that are not UTF-8 (which
// protobuf refuses to decode) are caught here, before the endpoint reader
// decodes the message and would drop the whole stream on them. Bytes
// fields (record batches) are skipped, not copied.
func checkWire(md protoreflect.MessageDescriptor, data []byte, depth int) error {
	if depth > maxNesting {
		return errors.New("messages nested too deep")
	}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("bad protobuf framing: %v", protowire.ParseError(n))
		}
		data = data[n:]
		fd := md.Fields().ByNumber(num)
		if typ == protowire.BytesType && fd != nil {
			v, m := protowire.ConsumeBytes(data)
			if m < 0 {
				return fmt.Errorf("bad protobuf framing: %v", protowire.ParseError(m))
			}
			switch fd.Kind() {
			case protoreflect.StringKind:
				if !utf8.Valid(v) {
					return fmt.Errorf("field %s is not valid UTF-8", fd.Name())
				}
			case protoreflect.MessageKind, protoreflect.GroupKind:
				if err := checkWire(fd.Message(), v, depth+1); err != nil {
					return fmt.Errorf("%s: %w", fd.Name(), err)
				}
			case protoreflect.BytesKind:
			default:
				if fd.IsList() {
					if err := checkPacked(fd.Kind(), v); err != nil {
						return fmt.Errorf("field %s: %w", fd.Name(), err)
					}
				}
			}
			data = data[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, data)
		if m < 0 {
			return fmt.Errorf("bad protobuf framing: %v", protowire.ParseError(m))
		}
		data = data[m:]
	}
	return nil
}
