package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Metadata (key 3), v0–12: brokers at their Kafka addresses, the
// controller, the cluster id, and each topic's partitions with leader,
// leader epoch, replicas and ISR. A partition whose leader has no Kafka
// listener answers LEADER_NOT_AVAILABLE.

func handleMetadata(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.MetadataRequest)
	// v1+: null topics is every topic, an empty list none; v0: empty is every topic.
	all := req.Topics == nil || (h.version == 0 && len(req.Topics) == 0)
	none := !all && len(req.Topics) == 0
	mreq := &messages.MetadataRequest{AllowAutoTopicCreation: req.AllowAutoTopicCreation && h.version >= 4}
	var unnamed []kmsg.MetadataRequestTopic
	for _, t := range req.Topics {
		if t.Topic == nil {
			unnamed = append(unnamed, t) // asked by topic id (v10+)
			continue
		}
		mreq.Topics = append(mreq.Topics, *t.Topic)
	}
	if none || (!all && len(mreq.Topics) == 0) {
		mreq.AllowAutoTopicCreation = false
		// Sluice reads an empty list as every topic; ask for one name no
		// topic can have, and keep none of the answer.
		mreq.Topics = []string{""}
	}
	answer := r.ask(mreq)
	return func() kmsg.Response { return metadataResponse(answer, mreq, none, len(unnamed)) }
}

// metadataResponse builds the answer; unnamed topics (asked by id) are
// unknown.
func metadataResponse(answer Answer, mreq *messages.MetadataRequest, none bool, unnamed int) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	res, err := answer.Wait()
	md, ok := res.(*messages.MetadataResponse)
	if err != nil || !ok {
		for _, name := range mreq.Topics {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(name), int16(messages.ErrorCode_REQUEST_TIMED_OUT)
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}

	listed := map[int32]bool{}
	for _, b := range kafkaBrokers(md) {
		resp.Brokers = append(resp.Brokers, b)
		listed[b.NodeID] = true
	}
	resp.ClusterID = kmsg.StringPtr(md.ClusterId)
	resp.ControllerID = -1
	if listed[md.ControllerId] {
		resp.ControllerID = md.ControllerId
	}
	for _, t := range md.Topics {
		if none || t.Name == "" {
			continue
		}
		kt := kmsg.NewMetadataResponseTopic()
		kt.Topic = kmsg.StringPtr(t.Name)
		kt.ErrorCode = kafkaCode(t.Error)
		kt.IsInternal = messages.IsInternalTopic(t.Name)
		kt.TopicID = topicID(t.TopicId)
		for _, p := range t.Partitions {
			kp := kmsg.NewMetadataResponseTopicPartition()
			kp.Partition, kp.Leader, kp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
			kp.Replicas, kp.ISR, kp.OfflineReplicas = nonNil(p.Replicas), nonNil(p.Isr), nonNil(p.OfflineReplicas)
			kp.ErrorCode = kafkaCode(p.Error)
			if kp.ErrorCode == 0 && !listed[p.Leader] {
				kp.Leader, kp.ErrorCode = -1, int16(messages.ErrorCode_LEADER_NOT_AVAILABLE)
			}
			kt.Partitions = append(kt.Partitions, kp)
		}
		resp.Topics = append(resp.Topics, kt)
	}
	for range unnamed {
		kt := kmsg.NewMetadataResponseTopic()
		kt.ErrorCode = errUnknownTopicID
		resp.Topics = append(resp.Topics, kt)
	}
	return resp
}

func nonNil(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}
