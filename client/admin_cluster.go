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
		out = append(out, BrokerInfo{ID: b.Id, Address: b.Address, Version: b.Version, Alive: true})
	}
	slices.SortFunc(out, func(x, y BrokerInfo) int { return int(x.ID) - int(y.ID) })
	return out
}

// DescribeCluster returns the cluster's brokers, controller and metadata
// store. Brokers named in replica assignments that are not registered are
// listed as not alive.
func (a *Admin) DescribeCluster(ctx context.Context) (*ClusterInfo, error) {
	md, err := a.Metadata(ctx)
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
