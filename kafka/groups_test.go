package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

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
