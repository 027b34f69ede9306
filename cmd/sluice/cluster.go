package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/client"
)

// runCluster is `sluice cluster info`, and the commands that move
// partitions between brokers (moves.go).
func runCluster(args []string, stdout, stderr io.Writer) error {
	const want = "want info, config, reassign, reassignments, rebalance or drain"
	if len(args) == 0 {
		return usageErr(want)
	}
	sub := args[0]
	switch sub {
	case "info", "config", "reassign", "reassignments", "rebalance", "drain":
	default:
		return usageErr("unknown cluster command %q: %s", sub, want)
	}
	fs := newFlagSet("cluster "+sub, stdout, stderr)
	conn := connFlags(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up on each request to the cluster after this long")
	format := formatFlag(fs)
	var moves moveFlags
	var cancelMoves *bool
	switch sub {
	case "reassign", "rebalance", "drain":
		moves = addMoveFlags(fs, format)
	}
	if sub == "reassign" {
		cancelMoves = fs.Bool("cancel", false, "cancel the moves in progress of the partitions named (TOPIC:PARTITION)")
	}
	var configOf *int
	if sub == "config" {
		configOf = fs.Int("broker-id", int(client.ClusterDefault), "the broker whose own settings to set or delete (default: the cluster's defaults, for every broker)")
	}
	pos, err := parseClientArgs(fs, conn, args[1:])
	if err != nil {
		return err
	}
	switch {
	case sub == "drain" && len(pos) != 1:
		return usageErr("want the id of the broker to drain")
	case sub != "drain" && sub != "reassign" && sub != "config" && len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	}
	var change *configChange
	if sub == "config" {
		if change, err = parseConfigChange(pos, int32(*configOf)); err != nil {
			return err
		}
	}
	if moves.throttle != nil {
		if err := moves.check(); err != nil {
			return err
		}
	}
	var drained int64
	if sub == "drain" {
		if drained, err = strconv.ParseInt(pos[0], 10, 32); err != nil || drained < 0 {
			return usageErr("%q: want a broker id", pos[0])
		}
	}
	admin, err := client.NewAdmin(*conn.broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	defer admin.Close()
	switch sub {
	case "reassign":
		return reassign(admin, pos, *cancelMoves, moves, *timeout, stdout)
	case "reassignments":
		return listReassignments(admin, format, *timeout, stdout)
	case "rebalance":
		return rebalance(admin, moves, *timeout, stdout)
	case "drain":
		return drain(admin, int32(drained), moves, *timeout, stdout)
	case "config":
		return clusterConfig(admin, change, format, *timeout, stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	info, err := admin.DescribeCluster(ctx)
	if err != nil {
		return err
	}
	if format.json() {
		out := clusterJSON{ClusterID: info.ClusterID, Controller: info.ControllerID, MetadataStore: info.MetadataStore,
			Topics: info.Topics, Partitions: info.Partitions, Brokers: []brokerJSON{}}
		for _, b := range info.Brokers {
			out.Brokers = append(out.Brokers, brokerJSON{ID: b.ID, Address: b.Address, State: brokerState(b), Version: b.Version, Rack: b.Rack})
		}
		writeJSONLine(stdout, out)
		return nil
	}
	controller := fmt.Sprint(info.ControllerID)
	if info.ControllerID < 0 {
		controller = "none"
	}
	fmt.Fprintf(stdout, "cluster %s\ncontroller: broker %s\nmetadata store: %s\ntopics: %d, partitions: %d\n\n",
		info.ClusterID, controller, info.MetadataStore, info.Topics, info.Partitions)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tRACK\tVERSION")
	for _, b := range info.Brokers {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", b.ID, orDash(b.Address), brokerState(b), orDash(b.Rack), orDash(b.Version))
	}
	return tw.Flush()
}

type clusterJSON struct {
	ClusterID     string       `json:"cluster_id"`
	Controller    int32        `json:"controller"`
	MetadataStore string       `json:"metadata_store"`
	Topics        int          `json:"topics"`
	Partitions    int          `json:"partitions"`
	Brokers       []brokerJSON `json:"brokers"`
}

type brokerJSON struct {
	ID      int32  `json:"id"`
	Address string `json:"address"`
	State   string `json:"state"`
	Version string `json:"version"`
	Rack    string `json:"rack"`
}

func brokerState(b client.BrokerInfo) string {
	if b.Alive {
		return "alive"
	}
	return "offline"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
