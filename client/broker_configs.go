package client

import (
	"context"
	"maps"
	"slices"

	"github.com/sluicemq/sluice/messages"
)

// ClusterDefault stands for the cluster's default settings where a broker
// id is asked for: they hold for every broker without a value of its own.
const ClusterDefault int32 = -1

// BrokerConfigs is the dynamic broker settings stored, under Kafka's
// names: the cluster's defaults and each broker's own values, which win
// over them, as both win over the broker's flags.
type BrokerConfigs struct {
	Cluster map[string]string
	Brokers map[int32]map[string]string
	// Dynamic lists the settings that can be changed while brokers run.
	Dynamic []string
}

// BrokerConfigs returns the dynamic broker settings stored. It needs
// DescribeConfigs on the cluster.
func (a *Admin) BrokerConfigs(ctx context.Context) (*BrokerConfigs, error) {
	resp, err := callAnyAs[*messages.DescribeBrokerConfigsResponse](ctx, a, &messages.DescribeBrokerConfigsRequest{})
	if err != nil {
		return nil, err
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return nil, err
	}
	out := &BrokerConfigs{Cluster: map[string]string{}, Brokers: map[int32]map[string]string{}, Dynamic: resp.Dynamic}
	for _, o := range resp.Configs {
		values := map[string]string{}
		for _, v := range o.Values {
			values[v.Name] = v.Value
		}
		if o.BrokerId == ClusterDefault {
			out.Cluster = values
		} else {
			out.Brokers[o.BrokerId] = values
		}
	}
	return out, nil
}

// AlterBrokerConfigs sets and deletes dynamic settings of a broker, or the
// cluster's defaults (ClusterDefault); a deleted one falls back to the
// cluster default, then to the broker's flag. A setting that cannot change
// while brokers run, or a bad value, refuses the whole change with
// INVALID_CONFIG naming it. It needs AlterConfigs on the cluster.
func (a *Admin) AlterBrokerConfigs(ctx context.Context, broker int32, set map[string]string, del []string) error {
	req := &messages.AlterBrokerConfigsRequest{BrokerId: broker, Delete: del}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		req.Set = append(req.Set, &messages.ConfigValue{Name: name, Value: set[name]})
	}
	resp, err := callAnyAs[*messages.AlterBrokerConfigsResponse](ctx, a, req)
	if err != nil {
		return err
	}
	return resp.Error.Err(resp.ErrorMessage)
}
