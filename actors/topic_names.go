package actors

import "github.com/sluicemq/sluice/messages"

// The topics a topic administration request names, in its order: what the
// broker authorizes it for and what a refusal of it answers for.

func CreateTopicsNames(m *messages.CreateTopicsRequest) []string {
	return namesOf(m.Topics, (*messages.TopicSpec).GetName)
}

func AlterConfigsNames(m *messages.AlterTopicConfigsRequest) []string {
	return namesOf(m.Topics, (*messages.TopicConfigChange).GetName)
}

func CreatePartitionsNames(m *messages.CreatePartitionsRequest) []string {
	return namesOf(m.Topics, (*messages.PartitionCount).GetName)
}

func namesOf[T any](items []T, name func(T) string) []string {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = name(it)
	}
	return names
}

// TopicResults is the same outcome for every topic named: the answer of
// a topic administration request refused as a whole.
func TopicResults(names []string, code messages.ErrorCode, text string) []*messages.TopicResult {
	out := make([]*messages.TopicResult, len(names))
	for i, n := range names {
		out[i] = &messages.TopicResult{Name: n, Error: code, ErrorMessage: text}
	}
	return out
}
