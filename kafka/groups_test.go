package kafka

import (
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Offsets whose stored metadata is longer than a commit may carry now are
// answered without it, so every version encodes (v1-5 write a string's
// length as an int16); a partition the broker refused keeps its error.
func TestOffsetFetchLongMetadataAndRefusals(t *testing.T) {
	long := strings.Repeat("m", 40_000)
	_, addr := startServer(t, oneAnswer(&messages.OffsetFetchResponse{Offsets: []*messages.OffsetCommitEntry{
		{Topic: "orders", Partition: 0, Offset: 7, Metadata: long},
		{Topic: "orders", Partition: 1, Offset: 8, Metadata: "short"},
		{Topic: "secret", Partition: 0, Offset: -1, Error: messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED},
	}}), Config{})
	for _, v := range []int16{1, 5, 7, 8} {
		c := dial(t, addr)
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		req.Group = "g"
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		type part struct {
			offset   int64
			metadata string
			code     int16
		}
		got := map[string]part{}
		add := func(topic string, p int32, offset int64, md *string, code int16) {
			s := ""
			if md != nil {
				s = *md
			}
			got[topic+"/"+string(rune('0'+p))] = part{offset, s, code}
		}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				add(tp.Topic, p.Partition, p.Offset, p.Metadata, p.ErrorCode)
			}
		}
		for _, g := range resp.Groups {
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					add(tp.Topic, p.Partition, p.Offset, p.Metadata, p.ErrorCode)
				}
			}
		}
		want := map[string]part{"orders/0": {7, "", 0}, "orders/1": {8, "short", 0}, "secret/0": {-1, "", 29}}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("v%d %s: %+v, want %+v", v, k, got[k], w)
			}
		}
	}
}

// OffsetFetch v9 names the member and its epoch; the broker is asked with
// them, and a stale epoch comes back as the group's error. Earlier
// versions and v9 without a member name none.
func TestOffsetFetchNamesTheMember(t *testing.T) {
	var mu sync.Mutex
	var asked []*messages.OffsetFetchRequest
	_, addr := startServer(t, answerBy(func(m proto.Message) (proto.Message, error) {
		req := m.(*messages.OffsetFetchRequest)
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		if req.MemberSet {
			return &messages.OffsetFetchResponse{Error: messages.ErrorCode_STALE_MEMBER_EPOCH, ErrorMessage: "stale"}, nil
		}
		return &messages.OffsetFetchResponse{}, nil
	}), Config{})
	member := "m1"
	for _, c := range []struct {
		version int16
		member  *string
		epoch   int32
		want    int16
	}{
		{9, &member, 4, 113},
		{9, nil, -1, 0},
		{9, nil, 0, 113}, // an epoch without a member is checked, as Kafka
		{8, nil, -1, 0},
	} {
		mu.Lock()
		asked = nil
		mu.Unlock()
		conn := dial(t, addr)
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(c.version)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "g", c.member, c.epoch
		req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		conn.send(frameRequest(req, 1))
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.SetVersion(c.version)
		if _, err := conn.read(resp); err != nil {
			t.Fatalf("v%d: %v", c.version, err)
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != c.want {
			t.Errorf("v%d member %v epoch %d: %+v, want error %d", c.version, c.member, c.epoch, resp.Groups, c.want)
		}
		mu.Lock()
		got := asked
		mu.Unlock()
		if len(got) != 1 {
			t.Fatalf("v%d: asked %d times", c.version, len(got))
		}
		if c.want != 0 && (got[0].MemberEpoch != c.epoch || (c.member != nil && got[0].MemberId != *c.member)) {
			t.Errorf("v%d: asked %+v", c.version, got[0])
		}
	}
}
