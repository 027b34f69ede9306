package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// FindCoordinator (key 10), v0–4: the broker coordinating a consumer group,
// at its Kafka address (v4 asks for several groups at once). Transaction
// coordinators do not exist: there are no transactions yet, and a
// transactional producer's question is answered with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients take as final (a
// retriable code would have them ask for their whole timeout), with a
// message that says why.

const (
	errCoordinatorNotAvailable      int16 = 15
	errTransactionalIDAuthorization int16 = 53
	coordinatorTypeGroup            int8  = 0
	coordinatorTypeTransaction      int8  = 1
	noTransactions                        = "this cluster does not support transactions yet: there is no transaction coordinator"
)

func handleFindCoordinator(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	keys := req.CoordinatorKeys
	if h.version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	groups := req.CoordinatorType == coordinatorTypeGroup
	answers := make([]Answer, len(keys))
	if groups {
		for i, k := range keys {
			answers[i] = r.ask(&messages.FindCoordinatorRequest{Group: k})
		}
	}
	brokers := r.ask(&messages.MetadataRequest{Topics: []string{""}})
	return func() kmsg.Response {
		resp := kmsg.NewPtrFindCoordinatorResponse()
		addrs := map[int32]kmsg.MetadataResponseBroker{}
		if res, err := brokers.Wait(); err == nil {
			if md, ok := res.(*messages.MetadataResponse); ok {
				for _, b := range kafkaBrokers(md) {
					addrs[b.NodeID] = b
				}
			}
		}
		for i, k := range keys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID = k, -1
			switch {
			case req.CoordinatorType == coordinatorTypeTransaction:
				c.ErrorCode, c.ErrorMessage = errTransactionalIDAuthorization, kmsg.StringPtr(noTransactions)
			case !groups:
				c.ErrorCode, c.ErrorMessage = int16(messages.ErrorCode_INVALID_REQUEST), kmsg.StringPtr("only group coordinators exist")
			default:
				res, err := answers[i].Wait()
				fr, ok := res.(*messages.FindCoordinatorResponse)
				switch {
				case err != nil || !ok:
					c.ErrorCode = errCoordinatorNotAvailable
				case fr.Error != messages.ErrorCode_NONE:
					c.ErrorCode, c.ErrorMessage = kafkaCode(fr.Error), kmsg.StringPtr(fr.ErrorMessage)
				default:
					b, listed := addrs[fr.BrokerId]
					if !listed {
						c.ErrorCode, c.ErrorMessage = errCoordinatorNotAvailable, kmsg.StringPtr("the coordinator has no Kafka listener")
						break
					}
					c.NodeID, c.Host, c.Port = b.NodeID, b.Host, b.Port
				}
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		if h.version < 4 && len(resp.Coordinators) == 1 {
			c := resp.Coordinators[0]
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
			resp.Coordinators = nil
		}
		return resp
	}
}
