package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeCluster lists the brokers with the cluster id and names the
// controller only when it is among them; a broker that does not answer is
// REQUEST_TIMED_OUT.
func TestDescribeClusterBrokersAndController(t *testing.T) {
	md := testMetadata()
	_, addr := startServer(t, oneAnswer(md), Config{})
	describe := func(addr string) *kmsg.DescribeClusterResponse {
		t.Helper()
		c := dial(t, addr)
		req := kmsg.NewPtrDescribeClusterRequest()
		c.send(frameRequest(req, 1))
		resp := kmsg.NewPtrDescribeClusterResponse()
		if _, err := c.read(resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := describe(addr)
	if resp.ErrorCode != 0 || resp.ClusterID != md.ClusterId || len(resp.Brokers) != len(kafkaBrokers(md)) || resp.ControllerID != md.ControllerId {
		t.Errorf("described %+v, want cluster %s, %d brokers, controller %d", resp, md.ClusterId, len(kafkaBrokers(md)), md.ControllerId)
	}
	_, down := startServer(t, failingBroker, Config{})
	if resp := describe(down); resp.ErrorCode != int16(messages.ErrorCode_REQUEST_TIMED_OUT) {
		t.Errorf("a broker that does not answer: code %d", resp.ErrorCode)
	}
}

// A transactional producer asking for its coordinator hears, at once and
// for good, that there are no transactions; an unknown coordinator type
// is INVALID_REQUEST.
func TestFindCoordinatorOfTransactions(t *testing.T) {
	_, addr := startServer(t, oneAnswer(testMetadata()), Config{})
	for _, tc := range []struct {
		typ  int8
		code int16
	}{{coordinatorTypeTransaction, errTransactionalIDAuthorization}, {7, int16(messages.ErrorCode_INVALID_REQUEST)}} {
		for _, v := range []int16{1, 4} {
			c := dial(t, addr)
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(v)
			req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = tc.typ, "tx", []string{"tx"}
			c.send(frameRequest(req, 1))
			resp := kmsg.NewPtrFindCoordinatorResponse()
			resp.SetVersion(v)
			if _, err := c.read(resp); err != nil {
				t.Fatal(err)
			}
			code, msg := resp.ErrorCode, resp.ErrorMessage
			if v >= 4 {
				code, msg = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].ErrorMessage
			}
			if code != tc.code || msg == nil || *msg == "" {
				t.Errorf("type %d v%d: code %d message %v, want %d with a reason", tc.typ, v, code, msg, tc.code)
			}
		}
	}
}
