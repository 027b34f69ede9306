package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// DeleteGroups answers each group with its own outcome: deleted, refused
// with the coordinator's code, refused by the broker (an ErrorResponse),
// or timed out when no answer came.
func TestDeleteGroupsPerGroupOutcome(t *testing.T) {
	_, addr := startServer(t, answerBy(func(req proto.Message) (proto.Message, error) {
		switch req.(*messages.DeleteGroupRequest).Group {
		case "done":
			return &messages.DeleteGroupResponse{}, nil
		case "busy":
			return &messages.DeleteGroupResponse{Error: messages.ErrorCode_NON_EMPTY_GROUP}, nil
		case "secret":
			return &messages.ErrorResponse{Error: messages.ErrorCode_GROUP_AUTHORIZATION_FAILED}, nil
		}
		return nil, errors.New("no answer")
	}), Config{})
	want := map[string]messages.ErrorCode{"done": messages.ErrorCode_NONE, "busy": messages.ErrorCode_NON_EMPTY_GROUP,
		"secret": messages.ErrorCode_GROUP_AUTHORIZATION_FAILED, "lost": messages.ErrorCode_REQUEST_TIMED_OUT}
	for _, v := range []int16{0, 2} {
		c := dial(t, addr)
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{"done", "busy", "secret", "lost"}
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrDeleteGroupsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(resp.Groups) != len(want) {
			t.Fatalf("v%d: %d groups answered", v, len(resp.Groups))
		}
		for _, g := range resp.Groups {
			if g.ErrorCode != int16(want[g.Group]) {
				t.Errorf("v%d %s: code %d, want %d", v, g.Group, g.ErrorCode, want[g.Group])
			}
		}
	}
}
