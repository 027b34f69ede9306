package transport

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// nameCert is an unsigned certificate with just the names CertPrincipal reads.
func nameCert(t testing.TB, cn string, uris ...string) *x509.Certificate {
	t.Helper()
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	for _, s := range uris {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		c.URIs = append(c.URIs, u)
	}
	return c
}

func TestCertPrincipal(t *testing.T) {
	for _, tc := range []struct {
		cn   string
		uris []string
		want string
	}{
		{"broker-7", []string{"sluice://broker/7"}, "Broker:7"},
		{"", []string{"sluice://broker/0"}, "Broker:0"},
		{"", []string{"sluice://broker/2147483647"}, "Broker:2147483647"},
		{"bob", []string{"sluice://user/alice"}, "User:alice"},
		{"carol", nil, "User:carol"},
		// A broker id that is no int32 >= 0 names no broker: the CN is used.
		{"dave", []string{"sluice://broker/abc"}, "User:dave"},
		{"dave", []string{"sluice://broker/-1"}, "User:dave"},
		{"dave", []string{"sluice://broker/2147483648"}, "User:dave"},
		{"dave", []string{"sluice://broker/"}, "User:dave"},
		{"dave", []string{"sluice://broker/1/2"}, "User:dave"},
		{"dave", []string{"sluice://broker"}, "User:dave"},
		{"erin", []string{"sluice://user/"}, "User:erin"},
		// Other schemes and hosts name nothing.
		{"frank", []string{"https://broker/1"}, "User:frank"},
		{"frank", []string{"spiffe://broker/1"}, "User:frank"},
		{"frank", []string{"sluice://other/1"}, "User:frank"},
		{"frank", []string{"sluice://ephemeral"}, "User:frank"},
		// The first URI that names a principal wins.
		{"", []string{"sluice://broker/x", "sluice://user/bob"}, "User:bob"},
		{"", []string{"sluice://user/bob", "sluice://broker/1"}, "User:bob"},
		{"", []string{"https://x/y", "sluice://broker/3"}, "Broker:3"},
		// A CN cannot make a broker.
		{"Broker:1", nil, "User:Broker:1"},
		{"", []string{"sluice://user/Broker:1"}, "User:Broker:1"},
		{"", nil, ""},
		{"", []string{"sluice://broker/abc"}, ""},
		{"", []string{"sluice://ephemeral"}, ""},
	} {
		if got := CertPrincipal(nameCert(t, tc.cn, tc.uris...)); got != tc.want {
			t.Errorf("CN %q URIs %q: %q, want %q", tc.cn, tc.uris, got, tc.want)
		}
	}
}

// Only sluice://broker/<digits> names a broker: a signed, escaped or
// decorated id is a different name that a CA may issue without meaning a
// broker, and must not alias one.
func TestCertPrincipalBrokerIDIsDigits(t *testing.T) {
	for _, uri := range []string{
		"sluice://broker/+1",
		"sluice://broker/-0",
		"sluice://broker/%31",
		"sluice://broker/1?user=mallory",
		"sluice://broker/1#x",
		"sluice://mallory@broker/1",
	} {
		if got := CertPrincipal(nameCert(t, "mallory", uri)); got != "User:mallory" {
			t.Errorf("%s: %q, want User:mallory", uri, got)
		}
	}
}

// strictBrokerID returns the id of a URI written exactly
// sluice://broker/<digits> (the scheme in any case, as URL parsing folds it).
func strictBrokerID(raw string) (int32, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !strings.EqualFold(scheme, sanScheme) {
		return 0, false
	}
	digits, ok := strings.CutPrefix(rest, "broker/")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 32)
	return int32(id), err == nil
}

func FuzzCertPrincipal(f *testing.F) {
	for _, s := range [][3]string{
		{"", "sluice://broker/1", ""},
		{"alice", "sluice://user/alice", ""},
		{"carol", "", ""},
		{"x", "sluice://broker/abc", "sluice://user/bob"},
		{"", "sluice://broker/2147483648", ""},
		{"", "https://broker/1", "sluice://broker/0012"},
		{"", "sluice://ephemeral", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, cn, uri1, uri2 string) {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		var raws []string
		for _, s := range []string{uri1, uri2} {
			if u, err := url.Parse(s); err == nil && s != "" {
				c.URIs = append(c.URIs, u)
				raws = append(raws, s)
			}
		}
		got := CertPrincipal(c)
		switch {
		case got == "":
			if cn != "" {
				t.Fatalf("CN %q but no principal", cn)
			}
		case strings.HasPrefix(got, BrokerPrincipalPrefix):
			id, err := strconv.ParseInt(strings.TrimPrefix(got, BrokerPrincipalPrefix), 10, 32)
			if err != nil || id < 0 || BrokerPrincipal(int32(id)) != got {
				t.Fatalf("%q is not Broker:<int32>", got)
			}
			named := false
			for _, raw := range raws {
				if n, ok := strictBrokerID(raw); ok && n == int32(id) {
					named = true
				}
			}
			if !named {
				t.Fatalf("%q from URIs %q, none of them sluice://broker/%d", got, raws, id)
			}
		case strings.HasPrefix(got, "User:"):
			if got == "User:" {
				t.Fatal("empty user name")
			}
		default:
			t.Fatalf("principal %q is neither Broker: nor User:", got)
		}
		// The first URI decides when it is exactly a broker's.
		if len(raws) > 0 {
			if id, ok := strictBrokerID(raws[0]); ok && id >= 0 && got != BrokerPrincipal(id) {
				t.Fatalf("%q: %q, want %s", raws[0], got, BrokerPrincipal(id))
			}
		}
		// Without any sluice URI the CN is the name.
		sluiceURI := false
		for _, u := range c.URIs {
			sluiceURI = sluiceURI || u.Scheme == sanScheme
		}
		if !sluiceURI && cn != "" && got != "User:"+cn {
			t.Fatalf("CN %q without sluice URIs: %q", cn, got)
		}
	})
}

// invalidAt decodes envelope i of b as the InvalidMessage that replaced it,
// or returns nil when it was not replaced.
func invalidAt(t testing.TB, b *remote.MessageBatch, i int) *messages.InvalidMessage {
	t.Helper()
	env := b.Envelopes[i]
	if env.TypeId < 0 || int(env.TypeId) >= len(b.TypeNames) || b.TypeNames[env.TypeId] != invalidMessageName {
		return nil
	}
	var im messages.InvalidMessage
	if err := proto.Unmarshal(env.MessageData, &im); err != nil {
		t.Fatalf("envelope %d: replacement does not decode: %v", i, err)
	}
	return &im
}

// withSender makes pid the sender of b's first envelope.
func withSender(b *remote.MessageBatch, pid *actor.PID) *remote.MessageBatch {
	b.Senders = append(b.Senders, pid)
	b.Envelopes[0].Sender = int32(len(b.Senders))
	return b
}

const (
	clientAddr  = "10.0.0.5:7000" // the restricted client's own node
	brokerAddr  = "10.0.0.1:9470"
	strangerAdr = "10.0.0.9:7000" // some other node
)

func restrictedOrigin() Origin {
	return Origin{Peer: "10.0.0.5:40000", Address: clientAddr, Principal: "User:alice", Restricted: true, Local: brokerAddr,
		Watched: func(watcher string, who *actor.PID) bool {
			return watcher == "broker/push/g/m-1" && who.Equal(actor.NewPID(clientAddr, "sub"))
		}}
}

// A restricted connection's targets all become this node's: protoactor
// would relay another address's as this node, letting a client speak as a
// broker.
func TestSanitizeRestrictedTargetsThisNode(t *testing.T) {
	origin := restrictedOrigin()
	b := withSender(systemBatch(t, actor.NewPID(strangerAdr, BrokerActorName), &messages.MetadataRequest{}), actor.NewPID(clientAddr, "reply"))
	if n, err := SanitizeBatch(b, origin); n != 0 || err != nil {
		t.Fatalf("replaced %d, %v", n, err)
	}
	if got := b.Targets[b.Envelopes[0].Target]; got.Address != brokerAddr || got.Id != BrokerActorName {
		t.Errorf("target %v, want %s/%s", got, brokerAddr, BrokerActorName)
	}
	b = systemBatch(t, actor.NewPID("localhost:9470", "broker/p/t/0"), &messages.ProduceRequest{Topic: "t"})
	if n, _ := SanitizeBatch(b, origin); n != 1 || b.Targets[0].Address != brokerAddr {
		t.Errorf("partition by another name: replaced %d, target %v", n, b.Targets[0])
	}
}

func TestSanitizeRestricted(t *testing.T) {
	origin := restrictedOrigin()
	own := actor.NewPID(clientAddr, "reply")
	stranger := actor.NewPID(strangerAdr, "victim")
	to := func(id string) *actor.PID { return actor.NewPID(brokerAddr, id) }
	pusher := to("broker/push/g/m-1")

	for _, tc := range []struct {
		name       string
		b          *remote.MessageBatch
		refused    bool
		wantSender int32
		code       messages.ErrorCode // of a refusal; default CLUSTER_AUTHORIZATION_FAILED
	}{
		{"request to the broker", withSender(systemBatch(t, to(BrokerActorName), &messages.MetadataRequest{}), own), false, 1, 0},
		{"request without sender", systemBatch(t, to(BrokerActorName), &messages.MetadataRequest{}), false, 0, 0},
		{"request to a partition", withSender(systemBatch(t, to("broker/p/t/0"), &messages.MetadataRequest{}), own), true, 1, 0},
		{"request to the controller", withSender(systemBatch(t, to(ControllerActorName), &messages.MetadataRequest{}), own), true, 1, 0},
		{"produce to a partition", systemBatch(t, to("broker/p/t/0"), &messages.ProduceRequest{Topic: "t"}), true, 0, 0},
		{"credit to a pusher", withSender(systemBatch(t, pusher, &messages.PushCredit{}), own), false, 1, 0},
		{"ack to a pusher", withSender(systemBatch(t, pusher, &messages.PushAck{}), own), false, 1, 0},
		{"end of its own actor", systemBatch(t, pusher, &actor.Terminated{Who: actor.NewPID(clientAddr, "sub")}), false, 0, 0},
		{"end of an actor nobody watches", systemBatch(t, pusher, &actor.Terminated{Who: actor.NewPID(clientAddr, "other")}), true, 0, messages.ErrorCode_UNKNOWN_MESSAGE_TYPE},
		{"end of an actor told to another", systemBatch(t, to(BrokerActorName), &actor.Terminated{Who: actor.NewPID(clientAddr, "sub")}), true, 0, messages.ErrorCode_UNKNOWN_MESSAGE_TYPE},
		{"end of the broker's own actor", systemBatch(t, to(BrokerActorName), &actor.Terminated{Who: to("broker/p/t/0")}), true, 0, messages.ErrorCode_UNKNOWN_MESSAGE_TYPE},
		{"dead letter answer", systemBatch(t, to("broker/anything"), &actor.DeadLetterResponse{}), false, 0, 0},
		{"watch of a pusher", systemBatch(t, pusher, &actor.Watch{Watcher: actor.NewPID(clientAddr, "sub")}), true, 0, messages.ErrorCode_UNKNOWN_MESSAGE_TYPE},
		{"watch of the broker", systemBatch(t, to(BrokerActorName), &actor.Watch{Watcher: actor.NewPID(clientAddr, "sub")}), true, 0, messages.ErrorCode_UNKNOWN_MESSAGE_TYPE},
		// Answers go to its own node only: the sender is dropped too, so
		// that the refusal itself goes nowhere.
		{"sender elsewhere", withSender(systemBatch(t, to(BrokerActorName), &messages.MetadataRequest{}), stranger), true, 0, 0},
		{"credit with sender elsewhere", withSender(systemBatch(t, pusher, &messages.PushCredit{}), stranger), true, 0, 0},
	} {
		var forged []string
		for _, env := range tc.b.Envelopes {
			env.MessageHeader = &remote.MessageHeader{HeaderData: map[string]string{PrincipalHeader: "Broker:1", PeerHeader: "forged"}}
			forged = append(forged, tc.b.TypeNames[env.TypeId])
		}
		n, err := SanitizeBatch(tc.b, origin)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		im := invalidAt(t, tc.b, 0)
		if tc.code == 0 {
			tc.code = messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED
		}
		switch {
		case tc.refused && (im == nil || n != 1):
			t.Errorf("%s: delivered (replaced %d)", tc.name, n)
		case tc.refused && (im.Error != tc.code || im.TypeName != forged[0] || im.Reason == ""):
			t.Errorf("%s: replacement %v, want %v for %s", tc.name, im, tc.code, forged[0])
		case !tc.refused && (im != nil || n != 0):
			t.Errorf("%s: refused: %v", tc.name, im)
		}
		if got := tc.b.Envelopes[0].Sender; got != tc.wantSender {
			t.Errorf("%s: sender index %d, want %d", tc.name, got, tc.wantSender)
		}
		h := tc.b.Envelopes[0].MessageHeader.GetHeaderData()
		if len(h) != 2 || h[PrincipalHeader] != "User:alice" || h[PeerHeader] != origin.Peer {
			t.Errorf("%s: headers %v", tc.name, h)
		}
	}
}

func TestSanitizeRestrictedBatch(t *testing.T) {
	origin := restrictedOrigin()
	origin.Principal = "" // a token the user table mapped to nothing
	req, _ := proto.Marshal(&messages.MetadataRequest{})
	b := &remote.MessageBatch{
		TypeNames: []string{"sluice.MetadataRequest"},
		Targets:   []*actor.PID{actor.NewPID(brokerAddr, BrokerActorName), actor.NewPID(brokerAddr, ControllerActorName)},
		Senders:   []*actor.PID{actor.NewPID(clientAddr, "a"), actor.NewPID(strangerAdr, "b")},
		Envelopes: []*remote.MessageEnvelope{
			{Target: 0, Sender: 1, MessageData: req},
			{Target: 1, Sender: 1, MessageData: req},
			{Target: 0, Sender: 2, MessageData: req},
			{Target: 0, Sender: 0, MessageData: req,
				MessageHeader: &remote.MessageHeader{HeaderData: map[string]string{PrincipalHeader: "Broker:0"}}},
		},
	}
	n, err := SanitizeBatch(b, origin)
	if err != nil || n != 2 {
		t.Fatalf("replaced %d, err %v; want 2", n, err)
	}
	if len(b.TypeNames) != 2 {
		t.Errorf("type names %q: one InvalidMessage entry serves every replacement", b.TypeNames)
	}
	for i, want := range []bool{false, true, true, false} {
		if got := invalidAt(t, b, i) != nil; got != want {
			t.Errorf("envelope %d: replaced %v, want %v", i, got, want)
		}
		if h := b.Envelopes[i].MessageHeader.GetHeaderData(); h[PrincipalHeader] != AnonymousPrincipal {
			t.Errorf("envelope %d: principal %q, want %s", i, h[PrincipalHeader], AnonymousPrincipal)
		}
	}
	if b.Envelopes[1].Sender != 1 || b.Envelopes[2].Sender != 0 {
		t.Errorf("senders %d, %d; want 1 (own node) and 0 (elsewhere)", b.Envelopes[1].Sender, b.Envelopes[2].Sender)
	}

	// Before the connection said which node it is, no sender is its own.
	unknown := restrictedOrigin()
	unknown.Address = ""
	b = withSender(systemBatch(t, actor.NewPID(brokerAddr, BrokerActorName), &messages.MetadataRequest{}), actor.NewPID(clientAddr, "a"))
	if n, _ := SanitizeBatch(b, unknown); n != 1 || b.Envelopes[0].Sender != 0 {
		t.Errorf("sender accepted before the ConnectRequest: replaced %d, sender %d", n, b.Envelopes[0].Sender)
	}
	// Without Restricted (a broker's connection) any actor and sender go.
	broker := Origin{Peer: "10.0.0.2:40000", Address: "10.0.0.2:9470", Principal: "Broker:2"}
	b = withSender(systemBatch(t, actor.NewPID(brokerAddr, ControllerActorName), &messages.MetadataRequest{}), actor.NewPID(strangerAdr, "x"))
	if n, err := SanitizeBatch(b, broker); n != 0 || err != nil || b.Envelopes[0].Sender != 1 {
		t.Errorf("broker origin: replaced %d, err %v, sender %d", n, err, b.Envelopes[0].Sender)
	}
	if h := b.Envelopes[0].MessageHeader.GetHeaderData(); h[PrincipalHeader] != "Broker:2" {
		t.Errorf("broker origin: principal %q", h[PrincipalHeader])
	}
}

// An envelope refused for its type is answered too (actors.Unhandled
// responds to an InvalidMessage), so for a restricted connection its
// sender on another node must be dropped like any other's: else a client
// makes the broker send an ErrorResponse, as Broker:N, to any actor.
func TestSanitizeRestrictedTypeRefusalDropsForeignSender(t *testing.T) {
	origin := restrictedOrigin()
	stranger := actor.NewPID(strangerAdr, "victim")
	target := actor.NewPID(brokerAddr, BrokerActorName)
	unknown := systemBatch(t, target, &messages.MetadataRequest{})
	unknown.TypeNames[0] = "no.such.Type"
	serializer := systemBatch(t, target, &messages.MetadataRequest{})
	serializer.Envelopes[0].SerializerId = 1
	for name, b := range map[string]*remote.MessageBatch{
		"unknown type":    withSender(unknown, stranger),
		"bad serializer":  withSender(serializer, stranger),
		"system message":  withSender(systemBatch(t, target, &actor.PoisonPill{}), stranger),
		"foreign watcher": withSender(systemBatch(t, target, &actor.Watch{Watcher: stranger}), stranger),
	} {
		n, err := SanitizeBatch(b, origin)
		if err != nil || n != 1 || invalidAt(t, b, 0) == nil {
			t.Errorf("%s: replaced %d, err %v", name, n, err)
		}
		if s := b.Envelopes[0].Sender; s != 0 {
			t.Errorf("%s: refused envelope keeps sender %v on another node", name, b.Senders[s-1])
		}
	}
}

// seedBatch is systemBatch for a fuzz target's seeds.
func seedBatch(target *actor.PID, msg proto.Message) *remote.MessageBatch {
	data, _ := proto.Marshal(msg)
	return &remote.MessageBatch{TypeNames: []string{string(proto.MessageName(msg))}, Targets: []*actor.PID{target},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: data}}}
}

// clientAllowed are the types a restricted connection may send to an actor
// other than the broker actor.
var clientAllowed = map[string]bool{
	"sluice.PushCredit": true, "sluice.PushAck": true,
	"actor.Terminated": true, "actor.DeadLetterResponse": true,
}

// FuzzSanitizeRestricted checks a client connection's limits on arbitrary
// batches: what is delivered unchanged addresses the broker actor (or is
// one of the few things a subscriber sends its pusher), answers only go to
// the client's own node, and every envelope carries the connection's
// principal.
func FuzzSanitizeRestricted(f *testing.F) {
	to := func(id string) *actor.PID { return actor.NewPID(brokerAddr, id) }
	own, stranger := actor.NewPID(clientAddr, "r"), actor.NewPID(strangerAdr, "r")
	req, _ := proto.Marshal(&messages.MetadataRequest{})
	term, _ := proto.Marshal(&actor.Terminated{Who: own})
	for _, b := range []*remote.MessageBatch{
		withSender(seedBatch(to(BrokerActorName), &messages.MetadataRequest{}), own),
		withSender(seedBatch(to(ControllerActorName), &messages.MetadataRequest{}), own),
		withSender(seedBatch(to("broker/push/g/m"), &messages.PushCredit{}), stranger),
		seedBatch(to("broker/push/g/m"), &actor.Terminated{Who: own}),
		{TypeNames: []string{"sluice.MetadataRequest", "actor.Terminated", "sluice.PushAck"},
			Targets:   []*actor.PID{to(BrokerActorName), to("broker/p/t/0")},
			Senders:   []*actor.PID{own, stranger},
			Envelopes: []*remote.MessageEnvelope{{Target: 1, Sender: 2, MessageData: req}, {TypeId: 1, Target: 1, MessageData: term}, {TypeId: 2, Target: 1, Sender: 1}}},
	} {
		data, _ := proto.Marshal(b)
		f.Add(data, "User:alice")
	}
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, data []byte, principal string) {
		b := &remote.MessageBatch{}
		if proto.Unmarshal(data, b) != nil {
			return
		}
		origin := restrictedOrigin()
		origin.Principal = principal
		wantPrincipal := principal
		if wantPrincipal == "" {
			wantPrincipal = AnonymousPrincipal
		}
		names := len(b.TypeNames) // replacements get a type id past these
		n, err := SanitizeBatch(b, origin)
		if err != nil {
			return // the stream is closed; nothing is delivered
		}
		replaced := 0
		for i, env := range b.Envelopes {
			if h := env.MessageHeader.GetHeaderData(); len(h) != 2 || h[PrincipalHeader] != wantPrincipal || h[PeerHeader] != origin.Peer {
				t.Fatalf("envelope %d: headers %v", i, h)
			}
			if int(env.TypeId) >= names {
				replaced++
				if invalidAt(t, b, i) == nil {
					t.Fatalf("envelope %d: replaced by %q", i, b.TypeNames[env.TypeId])
				}
				continue
			}
			name := b.TypeNames[env.TypeId]
			if id := b.Targets[env.Target].Id; id != BrokerActorName && !clientAllowed[name] {
				t.Fatalf("envelope %d: %s to %q delivered", i, name, id)
			}
			if env.Sender > 0 && b.Senders[env.Sender-1].Address != clientAddr {
				t.Fatalf("envelope %d: delivered with sender %v", i, b.Senders[env.Sender-1])
			}
		}
		if replaced != n {
			t.Fatalf("SanitizeBatch says %d replaced, %d were", n, replaced)
		}
	})
}
