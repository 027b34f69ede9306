package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// OffsetFetch (key 9), v1–9: committed offsets, -1 for a partition or
// group without one; v8+ asks for several groups at once; v9 names the
// member and its epoch, which a consumer group checks.

// offsetFetchGroup is one group of an OffsetFetch: the topics asked for
// (nil: every committed partition) and the member asking, if named.
type offsetFetchGroup struct {
	group       string
	topics      []kmsg.OffsetFetchRequestTopic
	memberSet   bool
	memberID    string
	memberEpoch int32
	answer      Answer
}

func handleOffsetFetch(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetFetchRequest)
	var groups []*offsetFetchGroup
	if h.version >= 8 {
		for _, g := range req.Groups {
			fg := &offsetFetchGroup{group: g.Group}
			// As Kafka: no member id and a negative epoch is an admin
			// fetch (or a client outside group management).
			if h.version >= 9 && (g.MemberID != nil || g.MemberEpoch >= 0) {
				fg.memberSet, fg.memberEpoch = true, g.MemberEpoch
				if g.MemberID != nil {
					fg.memberID = *g.MemberID
				}
			}
			if g.Topics != nil {
				fg.topics = []kmsg.OffsetFetchRequestTopic{}
				for _, t := range g.Topics {
					fg.topics = append(fg.topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			groups = append(groups, fg)
		}
	} else {
		groups = []*offsetFetchGroup{{group: req.Group, topics: req.Topics}}
	}
	for _, g := range groups {
		freq := &messages.OffsetFetchRequest{Group: g.group, MemberSet: g.memberSet, MemberId: g.memberID, MemberEpoch: g.memberEpoch}
		for _, t := range g.topics {
			freq.Partitions = append(freq.Partitions, &messages.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
		g.answer = r.ask(freq)
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrOffsetFetchResponse()
		for _, g := range groups {
			code, topics := offsetsOf(g)
			if h.version >= 8 {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.group, code
				for _, t := range topics {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p.Partition,
							Offset: p.Offset, LeaderEpoch: -1, Metadata: p.Metadata, ErrorCode: p.ErrorCode})
					}
					rg.Topics = append(rg.Topics, rt)
				}
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			resp.ErrorCode, resp.Topics = code, topics
			if h.version < 2 && code != 0 {
				// v0-1 carry errors on partitions only.
				for ti := range resp.Topics {
					for pi := range resp.Topics[ti].Partitions {
						resp.Topics[ti].Partitions[pi].ErrorCode = code
					}
				}
			}
		}
		return resp
	}
}

// offsetsOf waits for a group's offsets, grouped by topic in the order the
// coordinator answered them.
func offsetsOf(g *offsetFetchGroup) (int16, []kmsg.OffsetFetchResponseTopic) {
	fr, failed := answerAs[*messages.OffsetFetchResponse](g.answer)
	switch {
	case failed != 0:
		return failed, nil
	case fr.Error != messages.ErrorCode_NONE:
		return kafkaCode(fr.Error), nil
	}
	var topics []kmsg.OffsetFetchResponseTopic
	index := map[string]int{}
	for _, e := range fr.Offsets {
		i, seen := index[e.Topic]
		if !seen {
			i = len(topics)
			index[e.Topic] = i
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = e.Topic
			topics = append(topics, rt)
		}
		p := kmsg.NewOffsetFetchResponseTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode = e.Partition, e.Offset, -1, kafkaCode(e.Error)
		// Metadata longer than commits may carry now (stored before the
		// limit) is left out: v1-5 cannot even encode a string over 32,767
		// bytes.
		if e.Offset >= 0 && len(e.Metadata) <= offsetMetadataMaxBytes {
			p.Metadata = kmsg.StringPtr(e.Metadata)
		}
		topics[i].Partitions = append(topics[i].Partitions, p)
	}
	return 0, topics
}
