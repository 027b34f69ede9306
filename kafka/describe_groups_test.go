package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// DescribeGroups: a Sluice group's members come with their subscription
// and assignment in Kafka's consumer encoding; a Kafka clients' group
// keeps its own bytes; an unknown group is Dead; an error is the group's.
func TestDescribeGroupsOutcomes(t *testing.T) {
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		switch g := req.(*messages.DescribeGroupRequest).Group; g {
		case "native":
			return &messages.DescribeGroupResponse{Group: g, State: "Stable", Assignor: "range", Members: []*messages.MemberDescription{{
				MemberId: "m1", ClientId: "app", Topics: []string{"orders"}, PushAddress: "10.0.0.7:9471",
				Assignment: []*messages.TopicPartitions{{Topic: "orders", Partitions: []int32{0, 2}}},
			}}}, nil
		case "kafka":
			return &messages.DescribeGroupResponse{Group: g, State: "Stable", Assignor: "cooperative-sticky", ProtocolType: "consumer",
				Members: []*messages.MemberDescription{{MemberId: "k1", ClientId: "franz", InstanceId: "pod-1",
					ProtocolMetadata: []byte{1, 2}, RelayAssignment: []byte{3, 4}}}}, nil
		case "gone":
			return &messages.DescribeGroupResponse{Group: g, Error: messages.ErrorCode_GROUP_ID_NOT_FOUND}, nil
		default:
			return &messages.DescribeGroupResponse{Group: g, Error: messages.ErrorCode_NOT_COORDINATOR, ErrorMessage: "elsewhere"}, nil
		}
	}), Config{})
	c := dial(t, addr)
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(4)
	req.Groups = []string{"native", "kafka", "gone", "moved"}
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.SetVersion(4)
	if _, err := c.read(resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 4 {
		t.Fatalf("%d groups described", len(resp.Groups))
	}
	native := resp.Groups[0]
	if native.ErrorCode != 0 || native.State != "Stable" || native.ProtocolType != "consumer" || len(native.Members) != 1 {
		t.Fatalf("native group: %+v", native)
	}
	m := native.Members[0]
	var meta kmsg.ConsumerMemberMetadata
	var assigned kmsg.ConsumerMemberAssignment
	if err := meta.ReadFrom(m.ProtocolMetadata); err != nil || !slices.Equal(meta.Topics, []string{"orders"}) {
		t.Fatalf("subscription %v (%v)", meta.Topics, err)
	}
	if err := assigned.ReadFrom(m.MemberAssignment); err != nil || len(assigned.Topics) != 1 ||
		!slices.Equal(assigned.Topics[0].Partitions, []int32{0, 2}) || m.ClientHost != "10.0.0.7:9471" {
		t.Fatalf("assignment %+v host %q (%v)", assigned.Topics, m.ClientHost, err)
	}
	kafka := resp.Groups[1]
	if len(kafka.Members) != 1 || !slices.Equal(kafka.Members[0].MemberAssignment, []byte{3, 4}) ||
		deref(kafka.Members[0].InstanceID) != "pod-1" || kafka.Protocol != "cooperative-sticky" {
		t.Fatalf("Kafka clients' group: %+v", kafka)
	}
	if gone := resp.Groups[2]; gone.ErrorCode != 0 || gone.State != "Dead" {
		t.Fatalf("unknown group: code %d state %q", gone.ErrorCode, gone.State)
	}
	if moved := resp.Groups[3]; moved.ErrorCode != int16(messages.ErrorCode_NOT_COORDINATOR) {
		t.Fatalf("group elsewhere: code %d", moved.ErrorCode)
	}
}
