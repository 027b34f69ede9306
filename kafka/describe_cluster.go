package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeCluster (key 60), v0–1: brokers, controller and cluster id.

func handleDescribeCluster(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	answer := r.ask(&messages.MetadataRequest{Topics: []string{""}})
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeClusterResponse()
		res, err := answer.Wait()
		md, ok := res.(*messages.MetadataResponse)
		if err != nil || !ok {
			resp.ErrorCode = int16(messages.ErrorCode_REQUEST_TIMED_OUT)
			return resp
		}
		resp.ClusterID, resp.ControllerID = md.ClusterId, -1
		for _, b := range kafkaBrokers(md) {
			resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
			if b.NodeID == md.ControllerId {
				resp.ControllerID = b.NodeID
			}
		}
		return resp
	}
}
