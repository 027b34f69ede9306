package transport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluicemq/sluice/messages"
)

// The test binary doubles as the receiving process: with this variable set,
// TestMain runs a node with one actor, "echo", and prints its address.
const childEnv = "SLUICE_TRANSPORT_TEST_CHILD"

// sender is this process's node. It is started once, before any other gRPC
// use, because protoactor's Start resets gRPC's global logger, which races
// with gRPC goroutines already running.
var sender *Node

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		runChild()
		return
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var err error
	if sender, err = Start(Config{Host: "127.0.0.1", Port: 0}, logger); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sender.ServeSessions()
	os.Exit(m.Run())
}

func runChild() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	node, err := Start(Config{Host: "127.0.0.1", Port: 0}, logger)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	echo := actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.InvalidMessage:
			ctx.Respond(&messages.ErrorResponse{Error: messages.ErrorCode_UNKNOWN_MESSAGE_TYPE, Message: m.TypeName + ": " + m.Reason})
		case *messages.MetadataRequest:
			ctx.Respond(&messages.MetadataResponse{ClusterId: "alive"})
		case *messages.WhoAmIRequest:
			// Who the request came from, as the guard says.
			ctx.Respond(&messages.WhoAmIResponse{Principal: ctx.MessageHeader().Get(PrincipalHeader)})
		}
	})
	for _, name := range []string{"echo", BrokerActorName} {
		if _, err = node.System.Root.SpawnNamed(echo, name); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
	node.ServeSessions()
	fmt.Println("addr", node.Addr)
	_, _ = io.Copy(io.Discard, os.Stdin) // run until the parent closes stdin
}

// startChild runs the receiving node in a separate process.
func startChild(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "addr ") {
		t.Fatalf("child did not start: %q %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "addr ")), cmd
}

// unknownType builds a message type that only this (sending) process knows.
func unknownType(t *testing.T) protoreflect.MessageType {
	t.Helper()
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:    proto.String("evil.proto"),
		Package: proto.String("evil"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Unknown"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: proto.String("payload"), Number: proto.Int32(1), JsonName: proto.String("payload"),
				Type:  descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			}},
		}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	mt := dynamicpb.NewMessageType(fd.Messages().Get(0))
	if _, err := protoregistry.GlobalTypes.FindMessageByName(mt.Descriptor().FullName()); err != nil {
		if err := protoregistry.GlobalTypes.RegisterMessage(mt); err != nil {
			t.Fatal(err)
		}
	}
	return mt
}

func aliveCheck(t *testing.T, system *actor.ActorSystem, target *actor.PID) {
	t.Helper()
	res, err := system.Root.RequestFuture(target, &messages.MetadataRequest{}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("receiver stopped answering: %v", err)
	}
	if r, ok := res.(*messages.MetadataResponse); !ok || r.ClusterId != "alive" {
		t.Fatalf("unexpected answer %T %v", res, res)
	}
}

// A message type the receiver does not know crashes an unguarded protoactor
// process; the guard turns it into an UNKNOWN_MESSAGE_TYPE answer.
func TestUnknownMessageTypeFromAnotherProcess(t *testing.T) {
	addr, _ := startChild(t)
	node := sender
	target := actor.NewPID(addr, "echo")
	aliveCheck(t, node.System, target)

	msg := dynamicpb.NewMessage(unknownType(t).Descriptor())
	msg.Set(msg.Descriptor().Fields().ByName("payload"), protoreflect.ValueOfString("boom"))
	res, err := node.System.Root.RequestFuture(target, msg, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("no answer to an unknown message: %v", err)
	}
	er, ok := res.(*messages.ErrorResponse)
	if !ok || er.Error != messages.ErrorCode_UNKNOWN_MESSAGE_TYPE || !strings.Contains(er.Message, "evil.Unknown") {
		t.Fatalf("answer %T %v, want UNKNOWN_MESSAGE_TYPE naming evil.Unknown", res, res)
	}
	// The receiver still answers: the unknown type did not take it down.
	aliveCheck(t, node.System, target)
}

// Raw gRPC frames with out-of-range indexes and serializer ids, which
// protoactor would index without checks.
func TestMalformedBatchesFromAnotherProcess(t *testing.T) {
	addr, _ := startChild(t)
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := remote.NewRemotingClient(conn)
	target := actor.NewPID(addr, "echo")
	good, _ := proto.Marshal(&messages.MetadataRequest{})
	batches := []*remote.MessageBatch{
		{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 7, MessageData: good}}},
		{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, SerializerId: 9, MessageData: good}}},
		{TypeNames: []string{"no.such.Type"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: good}}},
		{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: []byte{0xff, 0xff, 0xff}}}},
		{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 5, MessageData: good}}},
		{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Sender: 3, MessageData: good}}},
		{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{nil},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: good}}},
	}
	for i, b := range batches {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		stream, err := rc.Receive(ctx)
		if err != nil {
			t.Fatalf("batch %d: open stream: %v", i, err)
		}
		_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{
			ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
				ServerConnection: &remote.ServerConnection{SystemId: "raw", Address: "127.0.0.1:1"}}}}})
		_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}})
		_ = stream.CloseSend()
		for {
			if _, err := stream.Recv(); err != nil {
				break
			}
		}
		cancel()
	}
	// The diagnostics RPCs panic in this protoactor version; they are refused.
	if _, err := rc.ListProcesses(context.Background(), &remote.ListProcessesRequest{}); err == nil {
		t.Fatal("ListProcesses answered")
	}
	aliveCheck(t, sender.System, target)
}

func TestSanitizeBatch(t *testing.T) {
	target := actor.NewPID("x", "y")
	good, _ := proto.Marshal(&messages.MetadataRequest{})
	b := &remote.MessageBatch{
		TypeNames: []string{"sluice.MetadataRequest", "no.such.Type"},
		Targets:   []*actor.PID{target},
		Envelopes: []*remote.MessageEnvelope{
			{TypeId: 0, MessageData: good},
			{TypeId: 1, MessageData: good},
			{TypeId: 5, MessageData: good},
			{TypeId: 0, SerializerId: 1, MessageData: good},
		},
	}
	n, err := SanitizeBatch(b, Origin{Peer: "127.0.0.1:5", Address: "x"})
	if err != nil || n != 3 {
		t.Fatalf("replaced %d, err %v; want 3, nil", n, err)
	}
	if b.Envelopes[0].TypeId != 0 {
		t.Fatal("a valid envelope was rewritten")
	}
	for _, env := range b.Envelopes[1:] {
		if b.TypeNames[env.TypeId] != "sluice.InvalidMessage" {
			t.Fatalf("envelope not replaced: %v", env)
		}
		var im messages.InvalidMessage
		if err := proto.Unmarshal(env.MessageData, &im); err != nil || im.Reason == "" {
			t.Fatalf("replacement unreadable: %v %v", err, &im)
		}
	}
	bad := &remote.MessageBatch{TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{target},
		Envelopes: []*remote.MessageEnvelope{{Target: 1}}}
	if _, err := SanitizeBatch(bad, Origin{}); err == nil {
		t.Fatal("out-of-range target accepted")
	}
}

// sendRaw sends batches over one raw remote stream that introduces itself
// as node from, and waits until the receiver closes it or 2 s pass.
func sendRaw(t *testing.T, addr, from string, batches ...*remote.MessageBatch) {
	t.Helper()
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stream, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{
		ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
			ServerConnection: &remote.ServerConnection{SystemId: "raw", Address: from}}}}})
	for _, b := range batches {
		if err := stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}); err != nil {
			break
		}
	}
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
}

// systemBatch is one envelope of protoactor system message msg to target.
func systemBatch(t *testing.T, target *actor.PID, msg proto.Message) *remote.MessageBatch {
	t.Helper()
	data, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return &remote.MessageBatch{TypeNames: []string{string(proto.MessageName(msg))}, Targets: []*actor.PID{target},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: data}}}
}

// Stop and PoisonPill from another process would stop the target for good,
// and a Terminated without a PID crashes an unguarded process; the guard
// refuses every such system message, and the target keeps answering.
func TestSystemMessagesFromAnotherProcess(t *testing.T) {
	addr, cmd := startChild(t)
	target := actor.NewPID(addr, "echo")
	aliveCheck(t, sender.System, target)
	from := "127.0.0.1:1"
	msgs := []proto.Message{
		&actor.Terminated{}, &actor.PoisonPill{}, &actor.Stop{}, &actor.Watch{}, &actor.Unwatch{},
		&actor.Terminated{Who: actor.NewPID("127.0.0.1:2", "elsewhere")},
		&actor.Watch{Watcher: actor.NewPID("127.0.0.1:2", "elsewhere")},
		&actor.Touch{},
	}
	for _, m := range msgs {
		sendRaw(t, addr, from, systemBatch(t, target, m))
		if cmd.ProcessState != nil {
			t.Fatalf("receiver exited after %T", m)
		}
		aliveCheck(t, sender.System, target)
	}
	// A well-formed Terminated of the sending node's own actor is delivered.
	sendRaw(t, addr, from, systemBatch(t, target, &actor.Terminated{Who: actor.NewPID(from, "gone")}))
	aliveCheck(t, sender.System, target)
}

func TestSanitizeSystemTypes(t *testing.T) {
	target := actor.NewPID("me:1", "broker")
	origin := Origin{Peer: "10.0.0.9:4242", Address: "10.0.0.9:9470", Local: "me:1", AcceptWatches: true,
		Watched: func(watcher string, who *actor.PID) bool {
			return watcher == target.Id && who.Equal(actor.NewPID("10.0.0.9:9470", "member"))
		}}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		name := mt.Descriptor().FullName()
		if name.Parent() == sluicePackage {
			return true
		}
		b := &remote.MessageBatch{TypeNames: []string{string(name)}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0}}}
		n, err := SanitizeBatch(b, origin)
		want := 1
		if name == "actor.DeadLetterResponse" {
			want = 0
		}
		if err != nil || n != want {
			t.Errorf("%s with an empty body: replaced %d (err %v), want %d", name, n, err, want)
		}
		return true
	})
	valid := []proto.Message{
		&actor.Watch{Watcher: actor.NewPID(origin.Address, "pusher")},
		&actor.Unwatch{Watcher: actor.NewPID(origin.Address, "pusher")},
		&actor.Terminated{Who: actor.NewPID(origin.Address, "member")},
	}
	for _, m := range valid {
		b := systemBatch(t, target, m)
		b.Envelopes[0].MessageHeader = &remote.MessageHeader{HeaderData: map[string]string{PeerHeader: "forged", PrincipalHeader: "Broker:1", "x": "y"}}
		if n, err := SanitizeBatch(b, origin); n != 0 || err != nil {
			t.Errorf("%T from its own node refused: %d %v", m, n, err)
		}
		// The connection's principal (anonymous without TLS), never the sender's.
		if h := b.Envelopes[0].MessageHeader.HeaderData; len(h) != 2 || h[PeerHeader] != origin.Peer || h[PrincipalHeader] != AnonymousPrincipal {
			t.Errorf("headers after the guard: %v, want only %s=%s and %s=%s", h, PeerHeader, origin.Peer, PrincipalHeader, AnonymousPrincipal)
		}
	}
	// Before the peer said who it is, no PID can be checked against it.
	if n, _ := SanitizeBatch(systemBatch(t, target, valid[2]), Origin{Peer: origin.Peer}); n != 1 {
		t.Error("Terminated accepted from a connection that has not introduced itself")
	}
	// A connection may watch only so many actors.
	bounded := origin
	left := 2
	bounded.WatchesLeft = &left
	for i, want := range []int{0, 0, 1} {
		if n, _ := SanitizeBatch(systemBatch(t, target, valid[0]), bounded); n != want {
			t.Errorf("watch %d of a connection allowed 2: replaced %d, want %d", i+1, n, want)
		}
	}
	// A broker's actors are not watched from other nodes.
	broker := origin
	broker.AcceptWatches = false
	for _, m := range valid[:2] {
		if n, _ := SanitizeBatch(systemBatch(t, target, m), broker); n != 1 {
			t.Errorf("%T accepted by a node that takes no watches", m)
		}
	}
	refused := []proto.Message{
		// The end of an actor nothing here watches, or watched by another.
		&actor.Terminated{Who: actor.NewPID(origin.Address, "stranger")},
		// This node's own actors: their end is known here, not from a peer.
		&actor.Terminated{Who: actor.NewPID("me:1", "broker/p/t/0")},
		&actor.Terminated{Who: actor.NewPID("nonhost", "broker/p/t/0")},
	}
	for _, m := range refused {
		if n, _ := SanitizeBatch(systemBatch(t, target, m), origin); n != 1 {
			t.Errorf("%v delivered", m)
		}
	}
	if n, _ := SanitizeBatch(systemBatch(t, actor.NewPID("me:1", "other"), valid[2]), origin); n != 1 {
		t.Error("Terminated delivered to an actor that does not watch it")
	}
	// A peer that claims this node's address is refused outright by the
	// stream (TestForgedSystemMessagesStopNoActor in cmd/sluice); were it not, its PIDs still are.
	for _, local := range []string{"me:1", "nonhost"} {
		impostor := origin
		impostor.Address = local
		impostor.Watched = func(string, *actor.PID) bool { return true }
		for _, m := range []proto.Message{&actor.Terminated{Who: actor.NewPID(local, "broker/controller")},
			&actor.Watch{Watcher: actor.NewPID(local, "x")}, &actor.Unwatch{Watcher: actor.NewPID(local, "x")}} {
			if n, _ := SanitizeBatch(systemBatch(t, target, m), impostor); n != 1 {
				t.Errorf("%v from a peer claiming %s delivered", m, local)
			}
		}
	}
}

// FuzzSanitizeBatch feeds arbitrary MessageBatch bytes through the guard and
// then decodes every envelope the way protoactor's endpoint reader does: no
// input may panic, and whatever passes is a decodable Sluice message or a
// system message with the PIDs protoactor dereferences.
func FuzzSanitizeBatch(f *testing.F) {
	target := actor.NewPID("127.0.0.1:1", "broker")
	good, _ := proto.Marshal(&messages.ProduceRequest{Topic: "t", Acks: 1, Records: []byte{1, 2, 3}})
	term, _ := proto.Marshal(&actor.Terminated{Who: actor.NewPID("127.0.0.1:2", "x")})
	subEnd, _ := proto.Marshal(&actor.Terminated{Who: actor.NewPID("127.0.0.1:2", "sub")})
	for _, b := range []*remote.MessageBatch{
		{TypeNames: []string{"sluice.ProduceRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: good}}},
		{TypeNames: []string{"actor.Terminated", "actor.PoisonPill"}, Targets: []*actor.PID{target},
			Senders:   []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: term}, {TypeId: 1, Sender: 1}}},
		{TypeNames: []string{"remote.ActorPidRequest"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0}}},
		// What a push subscriber sends its pusher, with its own and a
		// stranger's sender, and a forged refusal.
		{TypeNames: []string{"sluice.PushCredit", "sluice.PushAck", "sluice.InvalidMessage"},
			Targets:   []*actor.PID{actor.NewPID("127.0.0.1:1", "broker/push/g/m")},
			Senders:   []*actor.PID{actor.NewPID("127.0.0.1:2", "sub"), actor.NewPID("127.0.0.1:9", "x")},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Sender: 1}, {TypeId: 1, Sender: 2}, {TypeId: 2}}},
		{TypeNames: []string{"actor.Watch", "actor.DeadLetterResponse"}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: term}, {TypeId: 1, SerializerId: 1}}},
		// The end of a push subscriber, told its pusher.
		{TypeNames: []string{"actor.Terminated"}, Targets: []*actor.PID{actor.NewPID("127.0.0.1:1", "broker/push/g/m")},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: subEnd}}},
	} {
		data, _ := proto.Marshal(b)
		f.Add(data, "127.0.0.1:2", true, true)
		f.Add(data, "127.0.0.1:2", false, false)
	}
	for _, announced := range []string{"127.0.0.1:2", "127.0.0.1:1", "nonhost", ""} {
		f.Add([]byte{}, announced, true, false)
	}
	const local = "127.0.0.1:1"
	pusher, subscriber := "broker/push/g/m", "sub"
	f.Fuzz(func(t *testing.T, data []byte, announced string, acceptWatches, restricted bool) {
		b := &remote.MessageBatch{}
		if proto.Unmarshal(data, b) != nil {
			return
		}
		origin := Origin{Peer: "127.0.0.1:3", Address: announced, Local: local, AcceptWatches: acceptWatches, Restricted: restricted,
			Principal: "User:x", Watched: func(watcher string, who *actor.PID) bool {
				return watcher == pusher && who.Equal(actor.NewPID(announced, subscriber))
			}}
		if _, err := SanitizeBatch(b, origin); err != nil {
			return // the stream is closed; nothing is delivered
		}
		ofPeer := func(pid *actor.PID) bool {
			return pid != nil && pid.Id != "" && pid.Address == announced && !isLocalAddress(pid.Address, local)
		}
		for _, env := range b.Envelopes {
			if env.TypeId < 0 || int(env.TypeId) >= len(b.TypeNames) || env.SerializerId != protoSerializerID {
				t.Fatalf("envelope passed with type %d of %d, serializer %d", env.TypeId, len(b.TypeNames), env.SerializerId)
			}
			if env.MessageHeader.GetHeaderData()[PeerHeader] != origin.Peer {
				t.Fatal("envelope passed without the peer header")
			}
			name := b.TypeNames[env.TypeId]
			msg, err := remote.Deserialize(env.MessageData, name, env.SerializerId)
			if err != nil {
				// The endpoint reader would drop the whole stream.
				t.Fatalf("%s passed the guard but does not decode: %v", name, err)
			}
			target := b.Targets[env.Target]
			if target.Address != local {
				t.Fatalf("envelope passed to %v, not to this node %s", target, local)
			}
			switch m := msg.(type) {
			case *actor.Terminated:
				if !ofPeer(m.Who) || target.Id != pusher || m.Who.Id != subscriber {
					t.Fatalf("Terminated of %v passed to %v", m.Who, target)
				}
			case *actor.Watch:
				if !acceptWatches || !ofPeer(m.Watcher) {
					t.Fatalf("Watch passed with %v", m.Watcher)
				}
			case *actor.Unwatch:
				if !acceptWatches || !ofPeer(m.Watcher) {
					t.Fatalf("Unwatch passed with %v", m.Watcher)
				}
			case *actor.DeadLetterResponse:
			case proto.Message:
				if proto.MessageName(m).Parent() != sluicePackage {
					t.Fatalf("%s passed the guard", proto.MessageName(m))
				}
			}
		}
	})
}

// A string field that is not UTF-8 would make protobuf refuse the message,
// and protoactor drop the whole stream with it: the guard answers it with
// CORRUPT_RECORD instead, also inside nested messages; bytes fields are
// not checked.
func TestSanitizeInvalidUTF8(t *testing.T) {
	target := actor.NewPID("me:1", BrokerActorName)
	origin := Origin{Peer: "10.0.0.9:4242", Address: "10.0.0.9:9470", Local: "me:1"}
	encode := func(m proto.Message) []byte {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// Marshal refuses invalid UTF-8, so the bad strings are put in by hand:
	// "xx" is replaced in the encoding.
	corrupt := func(data []byte) []byte {
		i := bytes.Index(data, []byte("xx"))
		if i < 0 {
			t.Fatal("no xx in the encoding")
		}
		out := bytes.Clone(data)
		out[i], out[i+1] = 0xff, 0xff
		return out
	}
	for _, c := range []struct {
		name string
		m    proto.Message
		bad  bool
	}{
		{"topic", &messages.ProduceRequest{Topic: "xx", Records: []byte("xx")}, true},
		{"records are bytes", &messages.ProduceRequest{Topic: "t", Records: []byte("xx")}, false},
		{"nested", &messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "xx"}}}, true},
		{"map value", &messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: "t", Configs: map[string]string{"k": "xx"}}}}, true},
	} {
		b := &remote.MessageBatch{TypeNames: []string{string(proto.MessageName(c.m))}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{MessageData: corrupt(encode(c.m))}}}
		n, err := SanitizeBatch(b, origin)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		im := invalidAt(t, b, 0)
		switch {
		case c.bad && (n != 1 || im == nil || im.Error != messages.ErrorCode_CORRUPT_RECORD):
			t.Errorf("%s: replaced %d, %v; want CORRUPT_RECORD", c.name, n, im)
		case !c.bad && n != 0:
			t.Errorf("%s: refused: %v", c.name, im)
		}
	}
}

// A node reached by another name for its address (localhost for
// 127.0.0.1) is the node the sender addresses: protoactor would pass such
// a message on to that name, which is this node again, over a connection
// that claims to be this node.
func TestNodeAnswersToAnotherNameForItsAddress(t *testing.T) {
	addr, _ := startChild(t)
	_, port, err := ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	aliveCheck(t, sender.System, actor.NewPID(fmt.Sprintf("localhost:%d", port), "echo"))
}

// A session carries requests and their answers over the one connection
// the client opened: the answers come back without the receiving node
// connecting to the sender, with the guard's principal on each request.
func TestSessionCarriesRequestsAndAnswers(t *testing.T) {
	addr, _ := startChild(t)
	pid := sender.SessionPID(addr)
	for i := 0; i < 3; i++ {
		aliveCheck(t, sender.System, pid)
	}
	res, err := sender.System.Root.RequestFuture(pid, &messages.WhoAmIRequest{}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if who, ok := res.(*messages.WhoAmIResponse); !ok || who.Principal != AnonymousPrincipal {
		t.Fatalf("answer %T %v, want the anonymous principal", res, res)
	}
	// Several requests at once, each answer to its own sender.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sender.System.Root.RequestFuture(pid, &messages.MetadataRequest{}, 5*time.Second).Result()
			if r, ok := res.(*messages.MetadataResponse); err != nil || !ok || r.ClusterId != "alive" {
				t.Errorf("answer %T %v, %v", res, res, err)
			}
		}()
	}
	wg.Wait()
}
