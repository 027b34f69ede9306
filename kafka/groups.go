package kafka

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Group offsets and group listings, on Sluice's group coordinators:
//
//   OffsetCommit (key 8), v0–9: a member's commit (its id and generation)
//     or a standalone one (generation -1, no member id: kadm and
//     assign-mode consumers), accepted while the group has no members.
//   OffsetFetch (key 9), v1–9: committed offsets, -1 for a partition or
//     group without one; v8+ asks for several groups at once.
//   ListGroups (key 16), v0–4: the groups this broker coordinates.
//   DescribeGroups (key 15), v0–5: state, assignor and members, with each
//     member's subscription and assignment in Kafka's consumer encoding.
//   DeleteGroups (key 42), v0–2: below.
//
// Joining groups is in join.go.

const consumerProtocol = "consumer"

// offsetMetadataMaxBytes is the broker's limit on a commit's metadata
// (actors.OffsetMetadataMaxBytes, Kafka's offset.metadata.max.bytes).
const offsetMetadataMaxBytes = 4096

func handleOffsetCommit(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetCommitRequest)
	creq := &messages.OffsetCommitRequest{Group: req.Group, MemberId: req.MemberID, Generation: req.Generation, InstanceId: deref(req.InstanceID)}
	if h.version == 0 {
		creq.Generation = -1 // v0 has no member: a standalone commit
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			e := &messages.OffsetCommitEntry{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
			if p.Metadata != nil {
				e.Metadata = *p.Metadata
			}
			creq.Offsets = append(creq.Offsets, e)
		}
	}
	answer := r.ask(creq)
	return func() kmsg.Response {
		code := errorOf(answer, func(m *messages.OffsetCommitResponse) messages.ErrorCode { return m.Error })
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// offsetFetchGroup is one group of an OffsetFetch: the topics asked for
// (nil: every committed partition).
type offsetFetchGroup struct {
	group  string
	topics []kmsg.OffsetFetchRequestTopic
	answer Answer
}

func handleOffsetFetch(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetFetchRequest)
	var groups []*offsetFetchGroup
	if h.version >= 8 {
		for _, g := range req.Groups {
			fg := &offsetFetchGroup{group: g.Group}
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
		freq := &messages.OffsetFetchRequest{Group: g.group}
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

func handleListGroups(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ListGroupsRequest)
	answer := r.ask(&messages.ListGroupsRequest{})
	return func() kmsg.Response {
		resp := kmsg.NewPtrListGroupsResponse()
		res, err := answer.Wait()
		lr, ok := res.(*messages.ListGroupsResponse)
		if err != nil || !ok {
			resp.ErrorCode = int16(messages.ErrorCode_COORDINATOR_NOT_AVAILABLE)
			return resp
		}
		for _, g := range lr.Groups {
			if len(req.StatesFilter) > 0 && !containsFold(req.StatesFilter, g.State) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState = g.Group, consumerProtocol, g.State
			resp.Groups = append(resp.Groups, lg)
		}
		return resp
	}
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

func handleDescribeGroups(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	answers := make([]Answer, len(req.Groups))
	for i, g := range req.Groups {
		answers[i] = r.ask(&messages.DescribeGroupRequest{Group: g})
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeGroupsResponse()
		for i, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group = g
			dr, failed := answerAs[*messages.DescribeGroupResponse](answers[i])
			switch {
			case failed != 0:
				rg.ErrorCode = failed
			case dr.Error == messages.ErrorCode_GROUP_ID_NOT_FOUND:
				rg.State = "Dead" // as Kafka describes a group it does not know
			case dr.Error != messages.ErrorCode_NONE:
				rg.ErrorCode, rg.ErrorMessage = kafkaCode(dr.Error), kmsg.StringPtr(dr.ErrorMessage)
			default:
				rg.State, rg.ProtocolType, rg.Protocol = dr.State, consumerProtocol, dr.Assignor
				if dr.State == "Dead" {
					rg.ProtocolType = ""
				}
				if dr.ProtocolType != "" {
					rg.ProtocolType = dr.ProtocolType // a Kafka clients' group: their own bytes
				}
				for _, m := range dr.Members {
					if dr.ProtocolType != "" {
						rm := kmsg.DescribeGroupsResponseGroupMember{MemberID: m.MemberId, ClientID: m.ClientId,
							ClientHost: "-", ProtocolMetadata: m.ProtocolMetadata, MemberAssignment: m.RelayAssignment}
						if m.InstanceId != "" {
							rm.InstanceID = kmsg.StringPtr(m.InstanceId)
						}
						rg.Members = append(rg.Members, rm)
						continue
					}
					rg.Members = append(rg.Members, describeMember(m))
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// describeMember is a member in Kafka's terms: its subscription and
// assignment encoded as Kafka's consumer protocol encodes them, so Kafka
// tools decode them.
func describeMember(m *messages.MemberDescription) kmsg.DescribeGroupsResponseGroupMember {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = m.Topics
	assignment := kmsg.NewConsumerMemberAssignment()
	for _, tps := range m.Assignment {
		assignment.Topics = append(assignment.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tps.Topic, Partitions: tps.Partitions})
	}
	clientHost := m.PushAddress
	if clientHost == "" {
		clientHost = "-"
	}
	return kmsg.DescribeGroupsResponseGroupMember{MemberID: m.MemberId, ClientID: m.ClientId, ClientHost: clientHost,
		ProtocolMetadata: meta.AppendTo(nil), MemberAssignment: assignment.AppendTo(nil)}
}

// DeleteGroups (key 42), v0–2: deletes groups without members, with their
// committed offsets.

func handleDeleteGroups(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	answers := make([]Answer, len(req.Groups))
	for i, g := range req.Groups {
		answers[i] = r.ask(&messages.DeleteGroupRequest{Group: g})
	}
	return func() kmsg.Response {
		resp := kmsg.NewPtrDeleteGroupsResponse()
		for i, g := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = g
			rg.ErrorCode = errorOf(answers[i], func(m *messages.DeleteGroupResponse) messages.ErrorCode { return m.Error })
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// OffsetDelete (key 47), v0: deletes a group's committed offsets of
// partitions its members do not consume.

func handleOffsetDelete(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	dreq := &messages.DeleteOffsetsRequest{Group: req.Group}
	for _, t := range req.Topics {
		tps := &messages.TopicPartitions{Topic: t.Topic}
		for _, p := range t.Partitions {
			tps.Partitions = append(tps.Partitions, p.Partition)
		}
		dreq.Partitions = append(dreq.Partitions, tps)
	}
	answer := r.ask(dreq)
	return func() kmsg.Response {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		dr, failed := answerAs[*messages.DeleteOffsetsResponse](answer)
		switch {
		case failed != 0:
			resp.ErrorCode = failed
			return resp
		case dr.Error == messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED:
			// Kafka answers this one per partition.
			for _, t := range req.Topics {
				rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: kafkaCode(dr.Error)})
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		case dr.Error != messages.ErrorCode_NONE:
			resp.ErrorCode = kafkaCode(dr.Error)
			return resp
		}
		for _, p := range dr.Partitions {
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != p.Topic {
				resp.Topics = append(resp.Topics, kmsg.OffsetDeleteResponseTopic{Topic: p.Topic})
			}
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: kafkaCode(p.Error)})
		}
		return resp
	}
}

// deref is the string a nullable string points to ("" for null).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
