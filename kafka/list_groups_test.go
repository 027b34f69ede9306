package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// ListGroups lists the broker's groups as consumer groups, only those in
// the states asked for (v4, any case) when some are; a broker that does
// not answer is COORDINATOR_NOT_AVAILABLE.
func TestListGroupsFiltersAndErrors(t *testing.T) {
	_, addr := startServer(t, oneAnswer(&messages.ListGroupsResponse{Groups: []*messages.GroupOverview{
		{Group: "a", State: "Stable"}, {Group: "b", State: "Empty"}, {Group: "c", State: "PreparingRebalance"},
	}}), Config{})
	list := func(addr string, v int16, states ...string) *kmsg.ListGroupsResponse {
		t.Helper()
		c := dial(t, addr)
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(v)
		req.StatesFilter = states
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrListGroupsResponse()
		resp.SetVersion(v)
		if _, err := c.read(resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		return resp
	}
	names := func(resp *kmsg.ListGroupsResponse) (out []string) {
		for _, g := range resp.Groups {
			if g.ProtocolType != "consumer" {
				t.Errorf("group %s has protocol type %q", g.Group, g.ProtocolType)
			}
			out = append(out, g.Group)
		}
		return out
	}
	if got := names(list(addr, 0)); len(got) != 3 {
		t.Errorf("v0: %v, want all three", got)
	}
	if got := names(list(addr, 4, "stable", "EMPTY")); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("v4 stable and empty: %v, want [a b]", got)
	}
	_, down := startServer(t, failingBroker, Config{})
	if resp := list(down, 4); resp.ErrorCode != int16(messages.ErrorCode_COORDINATOR_NOT_AVAILABLE) || len(resp.Groups) != 0 {
		t.Errorf("a broker that does not answer: code %d, %d groups", resp.ErrorCode, len(resp.Groups))
	}
}
