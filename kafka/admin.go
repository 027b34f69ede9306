package kafka

import (
	"encoding/hex"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// The admin APIs map onto Sluice's controller requests; any broker takes
// them and forwards them to the controller.
//
//   CreateTopics (key 19), v0–7: -1 partitions or replicas is the broker
//     default; manual replica assignment is refused.
//   DeleteTopics (key 20), v0–6: by name (a topic id alone is refused).
//   CreatePartitions (key 37), v0–3: grows a topic, placed as at creation.
//   DescribeConfigs (key 32), v0–4: a topic's configuration, each value
//     marked as the topic's own or the broker default.
//   DescribeCluster (key 60), v0–1: brokers, controller and cluster id.

func handleCreateTopics(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := kmsg.NewPtrCreateTopicsResponse()
	creq := &messages.CreateTopicsRequest{ValidateOnly: req.ValidateOnly}
	refused := map[string]string{}
	for _, t := range req.Topics {
		if len(t.ReplicaAssignment) > 0 {
			refused[t.Topic] = "manual replica assignment is not supported; give a partition count and a replication factor"
			continue
		}
		spec := &messages.TopicSpec{Name: t.Topic, Partitions: max(t.NumPartitions, 0), ReplicationFactor: int32(max(t.ReplicationFactor, 0)),
			Configs: map[string]string{}}
		for _, c := range t.Configs {
			if c.Value != nil {
				spec.Configs[c.Name] = *c.Value
			}
		}
		creq.Topics = append(creq.Topics, spec)
	}
	var answer Answer
	if len(creq.Topics) > 0 {
		answer = r.ask(creq)
	}
	return func() kmsg.Response {
		results := topicResults(answer)
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, -1, -1
			if why, ok := refused[t.Topic]; ok {
				rt.ErrorCode, rt.ErrorMessage = int16(messages.ErrorCode_INVALID_REQUEST), kmsg.StringPtr(why)
			} else {
				rt.ErrorCode, rt.ErrorMessage = results(t.Topic)
				if rt.ErrorCode == 0 && h.version >= 5 {
					rt.NumPartitions, rt.ReplicationFactor = t.NumPartitions, t.ReplicationFactor
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

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

func handleDeleteTopics(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := kmsg.NewPtrDeleteTopicsResponse()
	names := slices.Clone(req.TopicNames)
	byID := 0
	for _, t := range req.Topics {
		if t.Topic == nil {
			byID++
			continue
		}
		names = append(names, *t.Topic)
	}
	var answer Answer
	if len(names) > 0 {
		answer = r.ask(&messages.DeleteTopicsRequest{Names: names})
	}
	return func() kmsg.Response {
		results := topicResults(answer)
		for _, name := range names {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			rt.ErrorCode, rt.ErrorMessage = results(name)
			resp.Topics = append(resp.Topics, rt)
		}
		for ; byID > 0; byID-- {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.ErrorCode = errUnknownTopicID
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

func handleCreatePartitions(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := kmsg.NewPtrCreatePartitionsResponse()
	creq := &messages.CreatePartitionsRequest{ValidateOnly: req.ValidateOnly}
	refused := map[string]bool{}
	for _, t := range req.Topics {
		if len(t.Assignment) > 0 {
			refused[t.Topic] = true
			continue
		}
		creq.Topics = append(creq.Topics, &messages.PartitionCount{Name: t.Topic, Count: t.Count})
	}
	var answer Answer
	if len(creq.Topics) > 0 {
		answer = r.ask(creq)
	}
	return func() kmsg.Response {
		results := topicResults(answer)
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			if refused[t.Topic] {
				rt.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
				rt.ErrorMessage = kmsg.StringPtr("manual replica assignment is not supported")
			} else {
				rt.ErrorCode, rt.ErrorMessage = results(t.Topic)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

func handleDescribeConfigs(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	var topics []string
	for _, res := range req.Resources {
		if res.ResourceType == kmsg.ConfigResourceTypeTopic {
			topics = append(topics, res.ResourceName)
		}
	}
	var answer Answer
	if len(topics) > 0 {
		answer = r.ask(&messages.MetadataRequest{Topics: topics})
	}
	defaults := r.conn.srv.cfg.TopicDefaults
	return func() kmsg.Response {
		resp := kmsg.NewPtrDescribeConfigsResponse()
		md := &messages.MetadataResponse{}
		if answer != nil {
			if res, err := answer.Wait(); err == nil {
				if m, ok := res.(*messages.MetadataResponse); ok {
					md = m
				}
			}
		}
		for _, res := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			switch res.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				t := findTopic(md, res.ResourceName)
				if t == nil || (t.Error != messages.ErrorCode_NONE && len(t.Partitions) == 0) {
					rr.ErrorCode = int16(messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION)
					if t == nil {
						rr.ErrorMessage = kmsg.StringPtr("no answer about this topic")
					}
					break
				}
				rr.Configs = topicConfigs(defaults, t.Configs, res.ConfigNames, h.version)
			case kmsg.ConfigResourceTypeBroker:
				// Brokers' settings are not exposed through this door.
			default:
				rr.ErrorCode = int16(messages.ErrorCode_INVALID_REQUEST)
				rr.ErrorMessage = kmsg.StringPtr("only topic and broker resources are described")
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

func findTopic(md *messages.MetadataResponse, name string) *messages.TopicMetadata {
	for _, t := range md.Topics {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// topicConfigs lists a topic's effective configuration, sorted by name:
// its own values, else the broker defaults.
func topicConfigs(defaults, own map[string]string, names []string, version int16) []kmsg.DescribeConfigsResponseResourceConfig {
	all := make([]string, 0, len(defaults))
	for name := range defaults {
		if len(names) == 0 || slices.Contains(names, name) {
			all = append(all, name)
		}
	}
	slices.Sort(all)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range all {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = name
		value, set := own[name]
		if !set {
			value = defaults[name]
		}
		c.Value = kmsg.StringPtr(value)
		c.IsDefault = !set
		c.Source = kmsg.ConfigSourceDefaultConfig
		if set {
			c.Source = kmsg.ConfigSourceDynamicTopicConfig
		}
		c.ConfigType = kmsg.ConfigTypeLong
		if _, err := strconv.ParseBool(value); err == nil {
			c.ConfigType = kmsg.ConfigTypeBoolean
		}
		out = append(out, c)
	}
	return out
}

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
			resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port})
			if b.NodeID == md.ControllerId {
				resp.ControllerID = b.NodeID
			}
		}
		return resp
	}
}

// kafkaBrokers lists the brokers of a metadata answer that have a Kafka
// listener, at its address.
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
		out = append(out, kmsg.MetadataResponseBroker{NodeID: b.Id, Host: host, Port: int32(port)})
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
