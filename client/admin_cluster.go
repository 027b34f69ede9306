package client

import (
	"context"
	"slices"

	"github.com/sluicemq/sluice/messages"
)

// BrokerInfo is one broker of the cluster.
type BrokerInfo struct {
	ID      int32
	Address string
	// Version is the Sluice version the broker runs ("" if it did not say).
	Version string
	// Rack is where it runs (its --rack; "" if it did not say).
	Rack string
	// Alive: registered with the metadata store right now. A broker that
	// holds replicas but is not registered is listed with Alive false.
	Alive bool
}

// ClusterInfo describes the cluster as one broker sees it.
type ClusterInfo struct {
	ClusterID string
	// ControllerID is the broker acting as controller (-1: none right now).
	ControllerID int32
	// MetadataStore says where the metadata lives (embedded, or Consul).
	MetadataStore string
	Brokers       []BrokerInfo
	Topics        int
	Partitions    int
}

// brokerInfos lists the live brokers of a metadata answer by id.
func brokerInfos(md *messages.MetadataResponse) []BrokerInfo {
	out := make([]BrokerInfo, 0, len(md.Brokers))
	for _, b := range md.Brokers {
		out = append(out, BrokerInfo{ID: b.Id, Address: b.Address, Version: b.Version, Rack: b.Rack, Alive: true})
	}
	slices.SortFunc(out, func(x, y BrokerInfo) int { return int(x.ID) - int(y.ID) })
	return out
}

// DescribeCluster returns the cluster's brokers, controller and metadata
// store. Brokers named in replica assignments that are not registered are
// listed as not alive.
func (a *Admin) DescribeCluster(ctx context.Context) (*ClusterInfo, error) {
	md, err := a.metadata(ctx)
	if err != nil {
		return nil, err
	}
	info := &ClusterInfo{ClusterID: md.ClusterId, ControllerID: md.ControllerId, MetadataStore: md.MetadataStore,
		Brokers: brokerInfos(md), Topics: len(md.Topics)}
	known := map[int32]bool{}
	for _, b := range info.Brokers {
		known[b.ID] = true
	}
	for _, t := range md.Topics {
		info.Partitions += len(t.Partitions)
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				if !known[r] {
					known[r] = true
					info.Brokers = append(info.Brokers, BrokerInfo{ID: r})
				}
			}
		}
	}
	slices.SortFunc(info.Brokers, func(x, y BrokerInfo) int { return int(x.ID) - int(y.ID) })
	return info, nil
}

// Metadata is the cluster as one broker sees it: the live brokers, the
// controller, and each topic's partitions with their leader and replicas.
type Metadata struct {
	ClusterID string
	// ControllerID is the broker acting as controller (-1: none right now).
	ControllerID int32
	Brokers      []BrokerInfo
	Topics       []TopicMetadata
}

// TopicMetadata is one topic in Metadata.
type TopicMetadata struct {
	Name       string
	TopicID    string
	Configs    map[string]string
	Partitions []PartitionMetadata
	// Err is why the topic is not described (ErrUnknownTopicOrPartition for
	// a topic asked for that does not exist).
	Err error
}

// PartitionMetadata is one partition in Metadata.
type PartitionMetadata struct {
	Partition int32
	// Leader is the broker that leads the partition (-1: none right now).
	Leader          int32
	LeaderEpoch     int32
	Replicas        []int32
	ISR             []int32
	OfflineReplicas []int32
	Err             error
}

// Metadata returns the cluster's metadata for topics (all when none given).
func (a *Admin) Metadata(ctx context.Context, topics ...string) (*Metadata, error) {
	md, err := a.metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := &Metadata{ClusterID: md.ClusterId, ControllerID: md.ControllerId, Brokers: brokerInfos(md)}
	for _, t := range md.Topics {
		tm := TopicMetadata{Name: t.Name, TopicID: t.TopicId, Configs: t.Configs, Err: t.Error.Err(t.ErrorMessage)}
		for _, p := range t.Partitions {
			tm.Partitions = append(tm.Partitions, PartitionMetadata{Partition: p.Partition, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.Isr, OfflineReplicas: p.OfflineReplicas,
				Err: p.Error.Err("")})
		}
		out.Topics = append(out.Topics, tm)
	}
	return out, nil
}
