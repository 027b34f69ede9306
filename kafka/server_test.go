package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
)

// fakeBroker answers metadata from a fixed response, after a delay per
// call taken from delays (so tests can make answers finish out of order).
type fakeBroker struct {
	mu     sync.Mutex
	md     *messages.MetadataResponse
	delays []time.Duration
	calls  []proto.Message
}

type fakeAnswer struct {
	delay time.Duration
	res   proto.Message
}

func (a fakeAnswer) Wait() (proto.Message, error) {
	time.Sleep(a.delay)
	if a.res == nil {
		return nil, errors.New("no broker")
	}
	return a.res, nil
}

func (f *fakeBroker) Ask(c Caller, req proto.Message, timeout time.Duration) Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, req)
	var d time.Duration
	if len(f.delays) > 0 {
		d, f.delays = f.delays[0], f.delays[1:]
	}
	if f.md == nil {
		return fakeAnswer{delay: d}
	}
	return fakeAnswer{delay: d, res: f.md}
}

// answerBy answers each ask with what its function makes of the request.
type answerBy func(req proto.Message) (proto.Message, error)

func (f answerBy) Ask(_ Caller, req proto.Message, _ time.Duration) Answer {
	res, err := f(req)
	return received{res: res, err: err}
}

// oneAnswer answers every ask with res.
func oneAnswer(res proto.Message) answerBy {
	return func(proto.Message) (proto.Message, error) { return res, nil }
}

// failingBroker fails every ask, as a broker that is not reachable.
var failingBroker = answerBy(func(proto.Message) (proto.Message, error) { return nil, errors.New("no broker") })

// startServer runs a listener on 127.0.0.1 with b and returns its address.
func startServer(t *testing.T, b Broker, cfg Config) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Broker = b
	s := NewServer(cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// client is a raw protocol connection for tests.
type client struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// frameRequest encodes req as a request frame with a correlation id.
func frameRequest(req kmsg.Request, correlationID int32) []byte {
	buf := make([]byte, 4, 64)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(correlationID))
	buf = binary.BigEndian.AppendUint16(buf, 4)
	buf = append(buf, "test"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

func (c *client) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one response into resp (whose version is set) and returns
// its correlation id.
func (c *client) read(resp kmsg.Response) (int32, error) {
	frame, err := readFrame(c.r, 1<<20)
	if err != nil {
		return 0, err
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		if body, err = skipTags(body); err != nil {
			return corr, err
		}
	}
	return corr, resp.ReadFrom(body)
}

func testMetadata() *messages.MetadataResponse {
	return &messages.MetadataResponse{ClusterId: "c1", ControllerId: 2,
		Brokers: []*messages.BrokerInfo{
			{Id: 1, Address: "127.0.0.1:9471", KafkaAddress: "127.0.0.1:9091"},
			{Id: 2, Address: "127.0.0.1:9472", KafkaAddress: "127.0.0.1:9092"},
			{Id: 3, Address: "127.0.0.1:9473"}, // no Kafka listener
		},
		Topics: []*messages.TopicMetadata{
			{Name: "orders", TopicId: "00112233445566778899aabbccddeeff", Partitions: []*messages.PartitionMetadata{
				{Partition: 0, Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, Isr: []int32{1, 2}},
				{Partition: 1, Leader: 3, LeaderEpoch: 1, Replicas: []int32{3, 1}, Isr: []int32{3}},
			}},
			{Name: "__consumer_offsets", Partitions: []*messages.PartitionMetadata{{Partition: 0, Leader: 2, Replicas: []int32{2}, Isr: []int32{2}}}},
			{Name: "nosuch", Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION},
		}}
}

// ApiVersions lists exactly the served APIs; asked at a version newer than
// served, it answers v0 with UNSUPPORTED_VERSION and the same list.
func TestApiVersions(t *testing.T) {
	_, addr := startServer(t, &fakeBroker{}, Config{})
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	c.send(frameRequest(req, 7))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if corr, err := c.read(resp); err != nil || corr != 7 {
		t.Fatalf("correlation %d, %v", corr, err)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(apis) {
		t.Fatalf("error %d, keys %+v", resp.ErrorCode, resp.ApiKeys)
	}
	for _, k := range resp.ApiKeys {
		if a := apis[k.ApiKey]; a.versions.min != k.MinVersion || a.versions.max != k.MaxVersion {
			t.Errorf("key %d advertised %d-%d, served %+v", k.ApiKey, k.MinVersion, k.MaxVersion, a.versions)
		}
	}

	req.SetVersion(99)
	c.send(frameRequest(req, 8))
	old := kmsg.NewPtrApiVersionsResponse()
	old.SetVersion(0)
	if corr, err := c.read(old); err != nil || corr != 8 {
		t.Fatalf("correlation %d, %v", corr, err)
	}
	if old.ErrorCode != errUnsupportedVersion || len(old.ApiKeys) != len(apis) {
		t.Fatalf("ApiVersions v99: error %d, %d keys", old.ErrorCode, len(old.ApiKeys))
	}
}

// Metadata lists the brokers at their Kafka addresses, marks partitions
// led by a broker without a Kafka listener, the internal topic, and
// passes unknown topics' errors on with Kafka's codes.
func TestMetadata(t *testing.T) {
	fb := &fakeBroker{md: testMetadata()}
	_, addr := startServer(t, fb, Config{})
	c := dial(t, addr)
	for _, version := range []int16{0, 1, 4, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(version)
		if version == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{} // v0: empty is every topic
		}
		c.send(frameRequest(req, int32(version)))
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(version)
		if corr, err := c.read(resp); err != nil || corr != int32(version) {
			t.Fatalf("v%d: correlation %d, %v", version, corr, err)
		}
		if len(resp.Brokers) != 2 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[1].Port != 9092 {
			t.Errorf("v%d: brokers %+v", version, resp.Brokers)
		}
		if version >= 1 && resp.ControllerID != 2 {
			t.Errorf("v%d: controller %d", version, resp.ControllerID)
		}
		if version >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "c1") {
			t.Errorf("v%d: cluster id %v", version, resp.ClusterID)
		}
		if len(resp.Topics) != 3 {
			t.Fatalf("v%d: %d topics", version, len(resp.Topics))
		}
		orders := resp.Topics[0]
		if *orders.Topic != "orders" || len(orders.Partitions) != 2 || orders.Partitions[0].Leader != 1 ||
			orders.Partitions[1].Leader != -1 || orders.Partitions[1].ErrorCode != 5 {
			t.Errorf("v%d: orders %+v", version, orders)
		}
		if version >= 7 && orders.Partitions[0].LeaderEpoch != 4 {
			t.Errorf("v%d: leader epoch %d", version, orders.Partitions[0].LeaderEpoch)
		}
		if version >= 10 && orders.TopicID[15] != 0xff {
			t.Errorf("v%d: topic id %x", version, orders.TopicID)
		}
		if version >= 1 && !resp.Topics[1].IsInternal {
			t.Errorf("v%d: __consumer_offsets is not internal", version)
		}
		if resp.Topics[2].ErrorCode != 3 {
			t.Errorf("v%d: unknown topic error %d", version, resp.Topics[2].ErrorCode)
		}
	}
	// v1+: an empty list asks for no topic.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(5)
	req.Topics = []kmsg.MetadataRequestTopic{}
	c.send(frameRequest(req, 100))
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(5)
	if _, err := c.read(resp); err != nil || len(resp.Topics) != 0 || len(resp.Brokers) != 2 {
		t.Fatalf("no topics: %v, %d topics, %d brokers", err, len(resp.Topics), len(resp.Brokers))
	}
}

// Answers go out in request order even when a later request is answered
// first.
func TestAnswersInRequestOrder(t *testing.T) {
	fb := &fakeBroker{md: testMetadata(), delays: []time.Duration{300 * time.Millisecond, 0, 0}}
	_, addr := startServer(t, fb, Config{})
	c := dial(t, addr)
	for i := int32(1); i <= 3; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(9)
		c.send(frameRequest(req, i))
	}
	for want := int32(1); want <= 3; want++ {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(9)
		corr, err := c.read(resp)
		if err != nil || corr != want {
			t.Fatalf("answer %d has correlation %d (%v)", want, corr, err)
		}
	}
}

// What a hostile or broken peer sends closes its own connection and
// nothing else: the listener serves the next connection.
func TestBadFramesCloseTheConnection(t *testing.T) {
	_, addr := startServer(t, &fakeBroker{md: testMetadata()}, Config{MaxFrameBytes: 1 << 20})
	huge := binary.BigEndian.AppendUint32(nil, 1<<30)
	unknownKey := frameRequest(kmsg.NewPtrMetadataRequest(), 1)
	binary.BigEndian.PutUint16(unknownKey[4:], 999)
	badVersion := frameRequest(kmsg.NewPtrMetadataRequest(), 1)
	binary.BigEndian.PutUint16(badVersion[6:], 99)
	truncated := frameRequest(kmsg.NewPtrMetadataRequest(), 1)[:9]
	binary.BigEndian.PutUint32(truncated, 5)
	badBody := binary.BigEndian.AppendUint32(nil, 14)
	badBody = append(badBody, 0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff) // v1 metadata, topic count 2^31-1
	for name, frame := range map[string][]byte{
		"a size prefix over the limit": huge,
		"an unknown API key":           unknownKey,
		"an unsupported version":       badVersion,
		"a header cut short":           truncated,
		"a body that does not parse":   badBody,
		"negative size":                {0xff, 0xff, 0xff, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(frame)
			if _, err := c.r.ReadByte(); err != io.EOF {
				t.Fatalf("read %v, want the connection closed", err)
			}
		})
	}
	c := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(1)
	if _, err := c.read(resp); err != nil || len(resp.Brokers) != 2 {
		t.Fatalf("a good connection after the bad ones: %v", err)
	}
}

// Connections beyond the limits are closed at once and counted.
func TestConnectionLimits(t *testing.T) {
	s, addr := startServer(t, &fakeBroker{md: testMetadata()}, Config{MaxConnections: 2})
	a, b := dial(t, addr), dial(t, addr)
	for _, c := range []*client{a, b} { // both admitted and served
		req := kmsg.NewPtrApiVersionsRequest()
		c.send(frameRequest(req, 1))
		if _, err := c.read(kmsg.NewPtrApiVersionsResponse()); err != nil {
			t.Fatal(err)
		}
	}
	// A third is admitted as pending, and closed unanswered when its
	// first request would make it the third established one.
	third := dial(t, addr)
	third.send(frameRequest(kmsg.NewPtrApiVersionsRequest(), 1))
	if _, err := third.r.ReadByte(); err != io.EOF {
		t.Fatalf("third connection: %v, want closed", err)
	}
	if s.Refused.Load() != 1 {
		t.Fatalf("refused %d", s.Refused.Load())
	}
}

// Connections that have not sent their first request are counted apart:
// beyond the pending limit of an address they are closed at once, and
// each is closed when its first request does not come in time, while
// clients that send requests are served.
func TestPendingConnections(t *testing.T) {
	s, addr := startServer(t, &fakeBroker{md: testMetadata()}, Config{MaxConnections: 2, MaxPendingPerIP: 3,
		FirstRequestTimeout: 300 * time.Millisecond})
	var silent []*client
	for range 3 {
		silent = append(silent, dial(t, addr))
	}
	fourth := dial(t, addr)
	if _, err := fourth.r.ReadByte(); err != io.EOF {
		t.Fatalf("a fourth pending connection: %v, want closed", err)
	}
	for _, c := range silent {
		if _, err := c.r.ReadByte(); err != io.EOF {
			t.Fatalf("a silent connection: %v, want closed after the first-request timeout", err)
		}
	}
	if s.Refused.Load() != 1 {
		t.Fatalf("refused %d, want 1", s.Refused.Load())
	}
	// The established limit (2) was never taken by the silent ones.
	for range 2 {
		c := dial(t, addr)
		c.send(frameRequest(kmsg.NewPtrApiVersionsRequest(), 1))
		if _, err := c.read(kmsg.NewPtrApiVersionsResponse()); err != nil {
			t.Fatal(err)
		}
	}
}

// A connection that sends nothing for the idle timeout after a request is
// closed.
func TestIdleConnectionClosed(t *testing.T) {
	_, addr := startServer(t, &fakeBroker{}, Config{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	c.send(frameRequest(kmsg.NewPtrApiVersionsRequest(), 1))
	if _, err := c.read(kmsg.NewPtrApiVersionsResponse()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("read %v, want the idle connection closed", err)
	}
}

// A response's error, as counted and logged, is its own or the first of
// its entries: a produce refused for one partition counts as refused.
func TestResponseError(t *testing.T) {
	produce := kmsg.NewPtrProduceResponse()
	produce.Topics = []kmsg.ProduceResponseTopic{{Topic: "a", Partitions: []kmsg.ProduceResponseTopicPartition{
		{Partition: 0}, {Partition: 1, ErrorCode: 29}}}}
	fetch := kmsg.NewPtrFetchResponse()
	fetch.Topics = []kmsg.FetchResponseTopic{{Topic: "a", Partitions: []kmsg.FetchResponseTopicPartition{
		{Partition: 0, RecordBatches: []byte{1, 2, 3}}}}}
	create := kmsg.NewPtrCreateTopicsResponse()
	create.Topics = []kmsg.CreateTopicsResponseTopic{{Topic: "b", ErrorCode: 36}}
	fetchSession := kmsg.NewPtrFetchResponse()
	fetchSession.ErrorCode = 70
	for _, c := range []struct {
		resp kmsg.Response
		want int16
	}{{produce, 29}, {fetch, 0}, {create, 36}, {fetchSession, 70}, {nil, 0}} {
		if got := responseError(c.resp); got != c.want {
			t.Errorf("%T: %d, want %d", c.resp, got, c.want)
		}
	}
}

// The dynamic max.connections and max.connections.per.ip, when set, are
// the limits for the next connection: open ones stay.
func TestConnectionLimitsFollowDynamicConfigs(t *testing.T) {
	var values atomic.Pointer[brokerconfig.Values]
	values.Store(&brokerconfig.Values{Cluster: map[string]string{brokerconfig.MaxConnectionsPerIP: "1"}})
	_, addr := startServer(t, &fakeBroker{md: testMetadata()}, Config{MaxConnections: 10, MaxConnectionsPerIP: 10,
		DynamicConfigs: values.Load})
	served := func(c *client) bool {
		c.send(frameRequest(kmsg.NewPtrApiVersionsRequest(), 1))
		_, err := c.read(kmsg.NewPtrApiVersionsResponse())
		return err == nil
	}
	if !served(dial(t, addr)) {
		t.Fatal("the first connection was refused")
	}
	if served(dial(t, addr)) {
		t.Fatal("a second connection from one address served with max.connections.per.ip 1")
	}
	values.Store(&brokerconfig.Values{Cluster: map[string]string{brokerconfig.MaxConnectionsPerIP: "5"},
		Broker: map[string]string{brokerconfig.MaxConnections: "2"}})
	if !served(dial(t, addr)) {
		t.Fatal("refused once max.connections.per.ip was raised")
	}
	if served(dial(t, addr)) {
		t.Fatal("a third connection served with max.connections 2")
	}
	values.Store(nil) // back to the configured limits
	if !served(dial(t, addr)) {
		t.Fatal("refused under the configured limits")
	}
}

// An address named in max.connections.per.ip.overrides has its own limit,
// from the flags or, replacing them, the dynamic value.
func TestConnectionLimitOverridesPerAddress(t *testing.T) {
	var values atomic.Pointer[brokerconfig.Values]
	_, addr := startServer(t, &fakeBroker{md: testMetadata()}, Config{MaxConnections: 100, MaxConnectionsPerIP: 1,
		MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.1": 3}, DynamicConfigs: values.Load})
	served := func() bool {
		c := dial(t, addr)
		c.send(frameRequest(kmsg.NewPtrApiVersionsRequest(), 1))
		_, err := c.read(kmsg.NewPtrApiVersionsResponse())
		return err == nil
	}
	for i := range 3 {
		if !served() {
			t.Fatalf("connection %d from 127.0.0.1 refused under its override of 3", i+1)
		}
	}
	if served() {
		t.Fatal("a fourth connection served over the override of 3")
	}
	values.Store(&brokerconfig.Values{Cluster: map[string]string{brokerconfig.MaxConnectionsPerIPOverrides: "127.0.0.1:5"}})
	if !served() {
		t.Fatal("refused under the dynamic override of 5")
	}
}
