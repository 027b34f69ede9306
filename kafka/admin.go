package kafka

import (
	"encoding/hex"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// The admin APIs map onto Sluice's controller requests; any broker takes
// them and forwards them to the controller: create_topics.go,
// delete_topics.go, create_partitions.go, describe_configs.go,
// describe_cluster.go. What they share is here.

// topicResults reads a controller answer's per-topic results; a failed
// answer fails every topic.
func topicResults(answer Answer) func(topic string) (int16, *string) {
	if answer == nil {
		return func(string) (int16, *string) { return errUnknownServerError, nil }
	}
	res, err := answer.Wait()
	if err != nil {
		return func(string) (int16, *string) {
			return int16(messages.ErrorCode_REQUEST_TIMED_OUT), kmsg.StringPtr(err.Error())
		}
	}
	var list []*messages.TopicResult
	switch m := res.(type) {
	case *messages.CreateTopicsResponse:
		list = m.Results
	case *messages.DeleteTopicsResponse:
		list = m.Results
	case *messages.CreatePartitionsResponse:
		list = m.Results
	case *messages.AlterTopicConfigsResponse:
		list = m.Results
	}
	return func(topic string) (int16, *string) {
		for _, tr := range list {
			if tr.Name == topic {
				if tr.ErrorMessage == "" {
					return kafkaCode(tr.Error), nil
				}
				return kafkaCode(tr.Error), kmsg.StringPtr(tr.ErrorMessage)
			}
		}
		return errUnknownServerError, kmsg.StringPtr("no result for this topic")
	}
}

// kafkaBrokers lists the brokers of a metadata answer that have a Kafka
// listener, at its address, with their racks.
func kafkaBrokers(md *messages.MetadataResponse) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, b := range md.Brokers {
		host, portText, err := net.SplitHostPort(b.KafkaAddress)
		if err != nil {
			continue // no Kafka listener on this broker
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			continue
		}
		kb := kmsg.MetadataResponseBroker{NodeID: b.Id, Host: host, Port: int32(port)}
		if b.Rack != "" {
			kb.Rack = kmsg.StringPtr(b.Rack)
		}
		out = append(out, kb)
	}
	return out
}

// topicID is a Sluice topic id (32 hex digits) as Kafka's 16 bytes.
func topicID(id string) (out [16]byte) {
	if b, err := hex.DecodeString(id); err == nil && len(b) == 16 {
		copy(out[:], b)
	}
	return out
}
