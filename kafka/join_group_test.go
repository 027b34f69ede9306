package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// JoinGroup relays the member's protocols with its timeouts (v0 has no
// rebalance timeout: the session timeout stands in), asks v4+ joiners for
// a member id first, and refuses a join without protocols itself.
func TestJoinGroupRelays(t *testing.T) {
	var asked []*messages.JoinGroupRequest
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		jr := req.(*messages.JoinGroupRequest)
		asked = append(asked, jr)
		if jr.MemberId == "" && jr.RequireMemberId {
			return &messages.JoinGroupResponse{Error: messages.ErrorCode_MEMBER_ID_REQUIRED, MemberId: "given-1"}, nil
		}
		return &messages.JoinGroupResponse{Generation: 3, MemberId: "given-1", LeaderId: "given-1", ProtocolType: "consumer",
			Assignor: "range", MemberMetadata: []*messages.MemberBytes{{MemberId: "given-1", Data: []byte{9}}}}, nil
	}), Config{})
	join := func(v int16, member string, protocols bool) *kmsg.JoinGroupResponse {
		t.Helper()
		c := dial(t, addr)
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(v)
		req.Group, req.MemberID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "g", member, 6000, 9000
		if protocols {
			req.ProtocolType = "consumer"
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{9}}}
		}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		return resp
	}
	if r := join(0, "", true); r.ErrorCode != 0 || r.Generation != 3 || len(r.Members) != 1 || asked[0].RebalanceTimeoutMs != 6000 {
		t.Fatalf("v0 join: %+v, asked %v", r, asked[0])
	}
	if r := join(5, "", true); r.ErrorCode != int16(messages.ErrorCode_MEMBER_ID_REQUIRED) || r.MemberID != "given-1" {
		t.Fatalf("v5 first join: code %d member %q", r.ErrorCode, r.MemberID)
	}
	if r := join(5, "given-1", true); r.ErrorCode != 0 || asked[2].RebalanceTimeoutMs != 9000 || deref(r.Protocol) != "range" {
		t.Fatalf("v5 join with the id: %+v, asked %v", r, asked[2])
	}
	n := len(asked)
	if r := join(5, "given-1", false); r.ErrorCode != int16(messages.ErrorCode_INCONSISTENT_GROUP_PROTOCOL) || len(asked) != n {
		t.Fatalf("a join without protocols: code %d, relayed %v", r.ErrorCode, len(asked) != n)
	}
}
