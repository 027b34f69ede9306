package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/client"
)

// sluice cluster config: the dynamic broker settings (Kafka's dynamic
// broker configs) listed, set or deleted, for the cluster's defaults or
// one broker (--broker-id).

// configChange is a `cluster config set|delete`; nil lists.
type configChange struct {
	broker int32
	set    map[string]string
	delete []string
}

func parseConfigChange(pos []string, broker int32) (*configChange, error) {
	if len(pos) == 0 {
		return nil, nil
	}
	ch := &configChange{broker: broker, set: map[string]string{}}
	switch pos[0] {
	case "set":
		if len(pos) < 2 {
			return nil, usageErr("want NAME=VALUE after set")
		}
		for _, kv := range pos[1:] {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || name == "" {
				return nil, usageErr("%q: want NAME=VALUE", kv)
			}
			ch.set[name] = value
		}
	case "delete":
		if len(pos) < 2 {
			return nil, usageErr("want the names to delete after delete")
		}
		ch.delete = pos[1:]
	default:
		return nil, usageErr("unknown config command %q: want set or delete, or nothing to list", pos[0])
	}
	return ch, nil
}

func clusterConfig(admin *client.Admin, ch *configChange, format *outputFormat, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if ch != nil {
		if err := admin.AlterBrokerConfigs(ctx, ch.broker, ch.set, ch.delete); err != nil {
			return err
		}
		scope := "the cluster's defaults"
		if ch.broker != client.ClusterDefault {
			scope = fmt.Sprintf("broker %d", ch.broker)
		}
		if !format.json() {
			fmt.Fprintf(stdout, "changed %s (brokers apply it as their metadata brings it)\n", scope)
		}
		return nil
	}
	cfgs, err := admin.BrokerConfigs(ctx)
	if err != nil {
		return err
	}
	if format.json() {
		out := configsJSON{Cluster: cfgs.Cluster, Brokers: map[string]map[string]string{}, Dynamic: cfgs.Dynamic}
		for id, values := range cfgs.Brokers {
			out.Brokers[fmt.Sprint(id)] = values
		}
		writeJSONLine(stdout, out)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tNAME\tVALUE")
	for _, name := range slices.Sorted(maps.Keys(cfgs.Cluster)) {
		fmt.Fprintf(tw, "cluster\t%s\t%s\n", name, cfgs.Cluster[name])
	}
	for _, id := range slices.Sorted(maps.Keys(cfgs.Brokers)) {
		for _, name := range slices.Sorted(maps.Keys(cfgs.Brokers[id])) {
			fmt.Fprintf(tw, "broker %d\t%s\t%s\n", id, name, cfgs.Brokers[id][name])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nsettable while brokers run: %s\n", strings.Join(cfgs.Dynamic, ", "))
	return nil
}

type configsJSON struct {
	Cluster map[string]string            `json:"cluster"`
	Brokers map[string]map[string]string `json:"brokers"`
	Dynamic []string                     `json:"dynamic"`
}
