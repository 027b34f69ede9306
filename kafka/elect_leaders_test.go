package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// ElectLeaders asks the controller for a preferred election of the
// partitions named (all when none are) and answers each partition's
// result under its topic; an unclean election is refused without asking;
// a broker that cannot be reached fails every partition.
func TestElectLeadersOutcomes(t *testing.T) {
	var asked *messages.ElectLeadersRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		asked = req.(*messages.ElectLeadersRequest)
		return &messages.ElectLeadersResponse{Results: []*messages.PartitionError{
			{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1, Error: messages.ErrorCode_ELECTION_NOT_NEEDED},
			{Topic: "b", Partition: 2, Error: messages.ErrorCode_PREFERRED_LEADER_NOT_AVAILABLE},
			{Topic: "gone", Partition: -1, Error: messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION},
		}}, nil
	}), Config{})
	for _, v := range []int16{0, 1, 2} {
		asked = nil
		c := dial(t, addr)
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "a", Partitions: []int32{0, 1}}, {Topic: "b", Partitions: []int32{2}}}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrElectLeadersResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if asked == nil || len(asked.Partitions) != 2 || asked.Partitions[0].Topic != "a" || len(asked.Partitions[0].Partitions) != 2 {
			t.Fatalf("v%d: the controller was asked %v", v, asked)
		}
		got := map[string]map[int32]int16{}
		for _, rt := range resp.Topics {
			got[rt.Topic] = map[int32]int16{}
			for _, p := range rt.Partitions {
				got[rt.Topic][p.Partition] = p.ErrorCode
			}
		}
		want := map[string]map[int32]int16{"a": {0: 0, 1: 84}, "b": {2: 80}, "gone": {}}
		if len(got) != len(want) || got["a"][0] != 0 || got["a"][1] != 84 || got["b"][2] != 80 || len(got["gone"]) != 0 || resp.ErrorCode != 0 {
			t.Fatalf("v%d: results %v (code %d), want %v", v, got, resp.ErrorCode, want)
		}
	}

	// Null topics: every partition.
	asked = nil
	c := dial(t, addr)
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(2)
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.SetVersion(2)
	if _, err := c.read(resp); err != nil || asked == nil || len(asked.Partitions) != 0 {
		t.Fatalf("all partitions: asked %v, err %v", asked, err)
	}

	// An unclean election is refused, and not asked for.
	asked = nil
	req = kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(1)
	req.ElectionType = 1
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "a", Partitions: []int32{0}}}
	c.send(frameRequest(req, 2))
	resp = kmsg.NewPtrElectLeadersResponse()
	resp.SetVersion(1)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	if asked != nil || resp.ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) || len(resp.Topics) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != int16(messages.ErrorCode_INVALID_REQUEST) {
		t.Fatalf("unclean election: asked %v, answer %+v", asked, resp)
	}

	_, down := startServer(t, failingBroker, Config{})
	c = dial(t, down)
	req = kmsg.NewPtrElectLeadersRequest()
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "a", Partitions: []int32{0}}}
	c.send(frameRequest(req, 1))
	resp = kmsg.NewPtrElectLeadersResponse()
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Fatalf("with no broker to ask: %+v", resp.Topics)
	}
}
