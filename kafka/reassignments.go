package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// AlterPartitionReassignments (key 45), v0–1, and
// ListPartitionReassignments (key 46), v0: partition moves, as Kafka's
// KIP-455. A partition given no replica list (null) has its move
// cancelled; an empty list is refused. v1 without
// AllowReplicationFactorChange refuses moves that change the number of
// replicas.

func handleAlterPartitionReassignments(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	sreq := &messages.AlterPartitionReassignmentsRequest{KeepReplicationFactor: h.version >= 1 && !req.AllowReplicationFactorChange}
	// refused are the partitions answered here: an empty replica list.
	refused := map[string]map[int32]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if p.Replicas != nil && len(p.Replicas) == 0 {
				if refused[t.Topic] == nil {
					refused[t.Topic] = map[int32]bool{}
				}
				refused[t.Topic][p.Partition] = true
				continue
			}
			sreq.Partitions = append(sreq.Partitions, &messages.PartitionReassignment{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas})
		}
	}
	var answer Answer
	if len(sreq.Partitions) > 0 {
		answer = r.ask(sreq)
	}
	return func() kmsg.Response {
		results := map[string]map[int32]*messages.PartitionError{}
		var code int16
		var text string
		if answer != nil {
			m, c := answerAs[*messages.AlterPartitionReassignmentsResponse](answer)
			if c == 0 {
				c, text = kafkaCode(m.Error), m.GetErrorMessage()
			}
			code = c
			for _, p := range m.GetResults() {
				if results[p.Topic] == nil {
					results[p.Topic] = map[int32]*messages.PartitionError{}
				}
				results[p.Topic][p.Partition] = p
			}
		}
		if code != 0 {
			resp.ErrorCode = code
			if text != "" {
				resp.ErrorMessage = kmsg.StringPtr(text)
			}
		}
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				pr := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				pr.Partition = p.Partition
				switch res := results[t.Topic][p.Partition]; {
				case refused[t.Topic][p.Partition]:
					pr.ErrorCode = int16(messages.ErrorCode_INVALID_REPLICA_ASSIGNMENT)
					pr.ErrorMessage = kmsg.StringPtr("an empty replica list: give the replicas, or null to cancel the move")
				case code != 0:
					pr.ErrorCode = code
				case res == nil:
					pr.ErrorCode = int16(messages.ErrorCode_UNKNOWN_SERVER_ERROR)
				default:
					pr.ErrorCode = kafkaCode(res.Error)
					if res.ErrorMessage != "" {
						pr.ErrorMessage = kmsg.StringPtr(res.ErrorMessage)
					}
				}
				rt.Partitions = append(rt.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

func handleListPartitionReassignments(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	sreq := &messages.ListPartitionReassignmentsRequest{}
	for _, t := range req.Topics {
		sreq.Partitions = append(sreq.Partitions, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
	}
	if req.Topics != nil && len(req.Topics) == 0 {
		return func() kmsg.Response { return resp } // none asked for
	}
	answer := r.ask(sreq)
	return func() kmsg.Response {
		m, code := answerAs[*messages.ListPartitionReassignmentsResponse](answer)
		if code == 0 {
			code = kafkaCode(m.Error)
		}
		if code != 0 {
			resp.ErrorCode = code
			if text := m.GetErrorMessage(); text != "" {
				resp.ErrorMessage = kmsg.StringPtr(text)
			}
			return resp
		}
		byTopic := map[string]int{}
		for _, o := range m.Reassignments {
			i, ok := byTopic[o.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[o.Topic] = i
				t := kmsg.NewListPartitionReassignmentsResponseTopic()
				t.Topic = o.Topic
				resp.Topics = append(resp.Topics, t)
			}
			p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas = o.Partition, o.Replicas, o.AddingReplicas, o.RemovingReplicas
			if p.AddingReplicas == nil {
				p.AddingReplicas = []int32{}
			}
			if p.RemovingReplicas == nil {
				p.RemovingReplicas = []int32{}
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
		}
		return resp
	}
}
