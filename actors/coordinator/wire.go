package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicemq/sluice/actors/consumergroup"
	"github.com/sluicemq/sluice/actors/groups"
	"github.com/sluicemq/sluice/messages"
)

// Conversions between the plain groups package's types and the wire messages.

func groupCode(c groups.Code) messages.ErrorCode { return codeNamed(c.String()) }

func consumerCode(c consumergroup.Code) messages.ErrorCode { return codeNamed(c.String()) }

// codeNamed is the wire error code of a plain package's code, which is
// named as the enum is ("NONE", "ILLEGAL_GENERATION", ...).
func codeNamed(name string) messages.ErrorCode {
	if v, ok := messages.ErrorCode_value[name]; ok {
		return messages.ErrorCode(v)
	}
	return messages.ErrorCode_UNKNOWN_SERVER_ERROR
}

func codeText(c groups.Code, member string) string {
	if c == groups.None {
		return ""
	}
	return fmt.Sprintf("member %q: %s", member, groupCode(c).Info().Description)
}

func toWireAssignment(a []groups.TopicPartitions) []*messages.TopicPartitions {
	out := make([]*messages.TopicPartitions, 0, len(a))
	for _, tp := range a {
		out = append(out, &messages.TopicPartitions{Topic: tp.Topic, Partitions: slices.Clone(tp.Partitions)})
	}
	return out
}

func fromWireAssignment(a []*messages.TopicPartitions) []groups.TopicPartitions {
	out := make([]groups.TopicPartitions, 0, len(a))
	for _, tp := range a {
		out = append(out, groups.TopicPartitions{Topic: tp.Topic, Partitions: slices.Clone(tp.Partitions)})
	}
	return out
}

func toWireSnapshot(s groups.Snapshot) *messages.GroupMetadataValue {
	v := &messages.GroupMetadataValue{Generation: s.Generation, Assignor: s.Assignor, LeaderId: s.Leader}
	for _, m := range s.Members {
		v.Members = append(v.Members, &messages.GroupMemberRecord{MemberId: m.MemberID, ClientId: m.ClientID,
			Topics: m.Topics, Assignors: m.Assignors, SessionTimeoutMs: int32(m.SessionTimeout.Milliseconds()),
			RebalanceTimeoutMs: int32(m.RebalanceTimeout.Milliseconds()), Assignment: toWireAssignment(m.Assignment),
			PushAddress: m.Push.Address, PushId: m.Push.ID, PushCredit: m.Push.Credit, AutoOffsetReset: m.AutoOffsetReset,
			Principal: m.Push.Principal, ProtocolType: m.ProtocolType, Protocols: toWireProtocols(m.Protocols),
			RelayAssignment: m.RelayAssignment, InstanceId: m.InstanceID})
	}
	return v
}

func toWireProtocols(ps []groups.Protocol) []*messages.GroupProtocol {
	var out []*messages.GroupProtocol
	for _, p := range ps {
		out = append(out, &messages.GroupProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return out
}

func toMemberBytes(ms []groups.MemberMetadata) []*messages.MemberBytes {
	var out []*messages.MemberBytes
	for _, m := range ms {
		out = append(out, &messages.MemberBytes{MemberId: m.MemberID, Data: m.Metadata})
	}
	return out
}

func fromMemberBytes(ms []*messages.MemberBytes) map[string][]byte {
	out := map[string][]byte{}
	for _, m := range ms {
		out[m.MemberId] = m.Data
	}
	return out
}

func fromWireSnapshot(v *messages.GroupMetadataValue) groups.Snapshot {
	s := groups.Snapshot{Generation: v.Generation, Assignor: v.Assignor, Leader: v.LeaderId}
	for _, m := range v.Members {
		s.Members = append(s.Members, groups.MemberRecord{MemberID: m.MemberId, ClientID: m.ClientId, Topics: m.Topics,
			Assignors: m.Assignors, SessionTimeout: time.Duration(m.SessionTimeoutMs) * time.Millisecond,
			RebalanceTimeout: time.Duration(m.RebalanceTimeoutMs) * time.Millisecond, Assignment: fromWireAssignment(m.Assignment),
			Push:            groups.PushTarget{Address: m.PushAddress, ID: m.PushId, Credit: m.PushCredit, Principal: m.Principal},
			AutoOffsetReset: m.AutoOffsetReset, ProtocolType: m.ProtocolType, RelayAssignment: m.RelayAssignment,
			InstanceID: m.InstanceId})
		for _, p := range m.Protocols {
			s.Members[len(s.Members)-1].Protocols = append(s.Members[len(s.Members)-1].Protocols, groups.Protocol{Name: p.Name, Metadata: p.Metadata})
		}
	}
	return s
}

// tickEvery is how often a coordinator checks its members' deadlines.
const tickEvery = 100 * time.Millisecond

func toWireConsumerGroup(s consumergroup.Snapshot) *messages.ConsumerGroupValue {
	v := &messages.ConsumerGroupValue{Epoch: s.Epoch, AssignmentEpoch: s.AssignmentEpoch, Assignor: s.Assignor, Counts: s.Counts}
	for _, m := range s.Members {
		v.Members = append(v.Members, &messages.ConsumerGroupMemberValue{MemberId: m.MemberID, InstanceId: m.InstanceID,
			RackId: m.RackID, ClientId: m.ClientID, ClientHost: m.ClientHost, Epoch: m.Epoch, PreviousEpoch: m.PreviousEpoch,
			State: int32(m.State), Topics: m.Topics, Regex: m.Regex, Assignor: m.Assignor, Principal: m.Principal,
			RebalanceTimeoutMs: int32(m.RebalanceTimeout.Milliseconds()), Assigned: toWireAssignment(m.Assigned),
			AssignedSince: m.Since, Revoking: toWireAssignment(m.Revoking), Target: toWireAssignment(m.Target), Leaving: m.Leaving})
	}
	return v
}

func fromWireConsumerGroup(v *messages.ConsumerGroupValue) consumergroup.Snapshot {
	s := consumergroup.Snapshot{Epoch: v.Epoch, AssignmentEpoch: v.AssignmentEpoch, Assignor: v.Assignor, Counts: v.Counts}
	for _, m := range v.Members {
		s.Members = append(s.Members, consumergroup.MemberSnapshot{MemberID: m.MemberId, InstanceID: m.InstanceId,
			RackID: m.RackId, ClientID: m.ClientId, ClientHost: m.ClientHost, Epoch: m.Epoch, PreviousEpoch: m.PreviousEpoch,
			State: consumergroup.MemberState(m.State), Topics: m.Topics, Regex: m.Regex, Assignor: m.Assignor, Principal: m.Principal,
			RebalanceTimeout: time.Duration(m.RebalanceTimeoutMs) * time.Millisecond, Assigned: fromWireAssignment(m.Assigned),
			Since: m.AssignedSince, Revoking: fromWireAssignment(m.Revoking), Target: fromWireAssignment(m.Target), Leaving: m.Leaving})
	}
	return s
}
