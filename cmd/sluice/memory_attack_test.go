package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// http2Preface is what an HTTP/2 client sends first: the preface and an
// empty SETTINGS frame.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// rssBytes is the resident set size of process pid, from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

func (b *brokerProc) pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd.Process.Pid
}

// memoryAttack runs attack against a fresh broker and fails the test if
// the broker's RSS grew by more than bound, if it stopped serving, or if it
// did not log logLine (each refusal is logged, not silent).
func memoryAttack(t *testing.T, bound int64, logLine string, attack func(b *brokerProc)) {
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "victim", 1, nil)
	produceN(t, b.Addr, "victim", 0, 5)
	before := rssBytes(t, b.pid())
	attack(b)
	after := rssBytes(t, b.pid())
	t.Logf("broker RSS %d MiB before the attack, %d MiB after", before>>20, after>>20)
	if !b.alive() {
		t.Fatalf("broker died:\n%s", tail(b.logs.String(), 30))
	}
	produceN(t, b.Addr, "victim", 0, 5)
	if after-before > bound {
		t.Errorf("RSS grew by %d MiB, more than %d MiB", (after-before)>>20, bound>>20)
	}
	if !strings.Contains(b.logs.String(), logLine) {
		t.Errorf("the broker did not log %q:\n%s", logLine, tail(b.logs.String(), 20))
	}
}

// Frames larger than any legal message are refused from their header: four
// streams each sending a 64 MiB message do not cost the broker 256 MiB.
func TestAttackOversizedFrames(t *testing.T) {
	memoryAttack(t, 100<<20, "", func(b *brokerProc) {
		payload := make([]byte, 64<<20)
		batch := &remote.MessageBatch{TypeNames: []string{"sluice.ProduceRequest"}, Targets: []*actor.PID{actor.NewPID(b.Addr, "broker")},
			Envelopes: []*remote.MessageEnvelope{{MessageData: payload}}}
		var wg sync.WaitGroup
		refused := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := grpc.Dial(b.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(128<<20)))
				if err != nil {
					refused <- err
					return
				}
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				stream, err := remote.NewRemotingClient(conn).Receive(ctx)
				if err != nil {
					refused <- err
					return
				}
				_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{
					ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
						ServerConnection: &remote.ServerConnection{SystemId: "raw", Address: "127.0.0.1:1"}}}}})
				_ = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: batch}})
				for err == nil { // the ConnectResponse, then the refusal
					_, err = stream.Recv()
				}
				refused <- err
			}()
		}
		wg.Wait()
		close(refused)
		for err := range refused {
			if err == nil || !strings.Contains(err.Error(), "larger than max") {
				t.Errorf("an oversized frame was not refused for its size: %v", err)
			}
		}
	})
}

// Connections that send only the HTTP/2 preface and SETTINGS, far more than
// one address may hold: those over the limit are closed at once, and the
// ones admitted cost little.
func TestAttackConnectionFlood(t *testing.T) {
	bound := int64(150 << 20)
	if raceEnabled {
		bound = 400 << 20 // the race detector's shadow of each connection's goroutines
	}
	memoryAttack(t, bound, "refused a connection", func(b *brokerProc) {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range 1200 {
			c, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
			if err != nil {
				continue
			}
			conns = append(conns, c)
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte(http2Preface))
		}
		// Every admitted connection has had its preface read by now: the
		// broker answers a request on a connection of its own.
		produceN(t, b.Addr, "victim", 0, 1)
		// Those over the limit were closed by the broker: a read ends.
		closed := 0
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
						closed++
					}
					break
				}
			}
		}
		t.Logf("%d connections opened, %d closed by the broker", len(conns), closed)
		if closed < len(conns)-250 {
			t.Errorf("only %d of %d connections were closed; the limit per address is 200", closed, len(conns))
		}
	})
}

// Watches of the broker's actors from another node: refused, so a peer
// cannot grow the broker's watch lists.
func TestAttackWatchFlood(t *testing.T) {
	bound := int64(100 << 20) // 29 MiB measured without the race detector
	if raceEnabled {
		bound = 200 << 20 // 85-104 MiB measured: the race detector's shadow of 300 MB of decoding
	}
	memoryAttack(t, bound, "refused remote messages", func(b *brokerProc) {
		from := "127.0.0.1:1"
		peer := dialRaw(t, b.Addr, from)
		var batches []*remote.MessageBatch
		n := 0
		for i := 0; i < 300; i++ {
			batch := &remote.MessageBatch{TypeNames: []string{"actor.Watch"}, Targets: []*actor.PID{actor.NewPID(b.Addr, "broker")}}
			for j := 0; j < 1000; j++ {
				data, _ := proto.Marshal(&actor.Watch{Watcher: actor.NewPID(from, fmt.Sprintf("w%d", n))})
				n++
				batch.Envelopes = append(batch.Envelopes, &remote.MessageEnvelope{MessageData: data})
			}
			batches = append(batches, batch)
		}
		peer.send(batches...)
		t.Logf("%d watches sent", n)
	})
}

// A connection that sends nothing after its preface is closed after the
// idle timeout, and the broker goes on serving clients.
func TestIdleConnectionsClosed(t *testing.T) {
	b := startBroker(t, "--connections-max-idle", "2s")
	createTopic(t, newAdmin(t, b.Addr), "idle", 1, nil)
	p, err := client.NewProducer(b.Addr, sharedOpts(), client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: "idle", Value: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(http2Preface)); err != nil {
		t.Fatal(err)
	}
	// The broker's SETTINGS and the like, then the end of the connection.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("a silent connection was not closed within 30 s with a 2 s idle timeout")
			}
			break
		}
	}
	if !strings.Contains(b.logs.String(), "closed an idle connection") {
		t.Errorf("the broker did not log the idle connection it closed")
	}
	// The producer still gets its records through.
	if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: "idle", Value: []byte("second")}); err != nil {
		t.Fatal(err)
	}
}

// A stream that never sends its ConnectRequest is closed with its
// connection after the connect timeout (10 s), not kept until it is idle.
func TestStreamWithoutConnectRequestClosed(t *testing.T) {
	b := startBroker(t)
	conn, err := grpc.Dial(b.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil || ctx.Err() != nil {
		t.Fatalf("the silent stream was not closed by the broker: %v", err)
	}
	// The broker logs right after it closes the connection.
	eventually(t, 10*time.Second, func() string {
		if !strings.Contains(b.logs.String(), "closed a connection that sent no ConnectRequest") {
			return "the broker did not log it:\n" + tail(b.logs.String(), 10)
		}
		return ""
	})
}

// A session that subscribes with all the credit there is and then reads
// nothing: the broker pushes until 64 MiB are queued for it, closes it and
// says so, and its memory grows by no more than that, though the topic
// holds twice as much. (Without the bound the session is never closed,
// and the broker grows by all it can push: 460 MiB for a topic of 512.)
func TestAttackSessionThatDoesNotRead(t *testing.T) {
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "victim", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := client.NewProducer(b.Addr, sharedOpts(), client.Acks(client.LeaderAck))
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 512<<10)
	for range 256 { // 128 MiB: twice what the session may queue
		p.Produce(ctx, &client.Record{Topic: "victim", Value: value}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	// The subscription below is sent once and its answer never read, so the
	// coordinator must have loaded its groups first (it refuses requests
	// with COORDINATOR_NOT_AVAILABLE while it loads).
	admin := newAdmin(t, b.Addr)
	waitFor(t, "the coordinator of hoarder loaded", func() bool {
		_, err := admin.DescribeGroup(ctx, "hoarder")
		return err == nil
	})
	before := rssBytes(t, b.pid())

	conn, err := grpc.Dial(b.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, transport.SessionMethod)
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(&messages.SubscribeRequest{Group: "hoarder", Topics: []string{"victim"}, TargetAddress: "session",
		TargetId: "me", InitialCredit: math.MaxInt32})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*remote.RemoteMessage{
		{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{ConnectionType: &remote.ConnectRequest_ServerConnection{
			ServerConnection: &remote.ServerConnection{Address: "session"}}}}},
		{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{TypeNames: []string{"sluice.SubscribeRequest"},
			Targets: []*actor.PID{transport.BrokerPID(b.Addr)}, Senders: []*actor.PID{actor.NewPID("session", "1")},
			Envelopes: []*remote.MessageEnvelope{{Target: 0, TypeId: 0, Sender: 1, MessageData: data}}}}},
	} {
		if err := stream.SendMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	after := before // the most seen while the session lasted
	waitFor(t, "the session closed", func() bool {
		after = max(after, rssBytes(t, b.pid()))
		return strings.Contains(b.logs.String(), "closed a client session that does not read")
	})
	t.Logf("broker RSS %d MiB before the session, at most %d MiB while it lasted", before>>20, after>>20)
	bound := int64(160 << 20)
	if raceEnabled {
		bound = 400 << 20 // the race detector's shadow of the queued pushes
	}
	if after-before > bound {
		t.Errorf("RSS grew by %d MiB, more than %d MiB", (after-before)>>20, bound>>20)
	}
	produceN(t, b.Addr, "victim", 0, 5)
}
