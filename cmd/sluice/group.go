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

func runGroup(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("want list, describe, delete, reset-offsets or delete-offsets")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("group "+sub, stdout, stderr)
	conn := connFlags(fs)
	broker := conn.broker
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var format *outputFormat
	if sub == "list" || sub == "describe" {
		format = formatFlag(fs)
	}
	var topic *string
	var toEarliest, toLatest *bool
	var toOffset *int64
	var toDatetime *string
	var byDuration *time.Duration
	var partition partitionFlag
	if sub == "delete-offsets" {
		topic = fs.String("topic", "", "topic whose committed offsets to delete")
		fs.Var(&partition, "partition", "only this partition (default: all)")
	}
	if sub == "reset-offsets" {
		topic = fs.String("topic", "", "topic whose offsets to reset")
		toEarliest = fs.Bool("to-earliest", false, "reset to the first offset")
		toLatest = fs.Bool("to-latest", false, "reset to the end")
		toOffset = fs.Int64("to-offset", -1, "reset to this offset (moved into the log start..end range)")
		toDatetime = fs.String("to-datetime", "", "reset to the first record at or after this time (Unix ms or RFC 3339; the end if none is)")
		byDuration = fs.Duration("by-duration", 0, "reset to the first record at or after this long ago (1h30m; the end if none is)")
	}
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	admin, err := client.NewAdmin(*broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	switch sub {
	case "list":
		groups, err := admin.ListGroups(ctx)
		if err != nil {
			return err
		}
		if format.json() {
			for _, g := range groups {
				writeJSONLine(stdout, groupListJSON{Group: g.Group, State: g.State, Members: g.Members, Coordinator: g.Coordinator, Type: g.GroupType})
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTYPE\tSTATE\tMEMBERS\tCOORDINATOR")
		for _, g := range groups {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", g.Group, g.GroupType, g.State, g.Members, g.Coordinator)
		}
		return tw.Flush()
	case "describe":
		if len(pos) != 1 {
			return usageErr("want exactly one group")
		}
		info, err := admin.DescribeGroup(ctx, pos[0])
		if err != nil {
			return err
		}
		if format.json() {
			writeJSONLine(stdout, groupJSON(info))
			return nil
		}
		if info.GroupType == "consumer" { // Kafka's consumer protocol: no leader, epochs
			fmt.Fprintf(stdout, "group %s (consumer protocol): %s, epoch %d, assignment epoch %d, assignor %q, coordinator %d\n",
				info.Group, info.State, info.Generation, info.AssignmentEpoch, info.Assignor, info.Coordinator)
		} else {
			fmt.Fprintf(stdout, "group %s: %s, generation %d, assignor %q, leader %q, coordinator %d\n",
				info.Group, info.State, info.Generation, info.Assignor, info.LeaderId, info.Coordinator)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER\tCLIENT\tTOPICS\tASSIGNMENT")
		for _, m := range info.Members {
			var parts []string
			for _, tps := range m.Assignment {
				parts = append(parts, fmt.Sprintf("%s%v", tps.Topic, ids(tps.Partitions)))
			}
			client := m.ClientId
			if m.PushId != "" {
				client += " (push to " + m.PushAddress + "/" + m.PushId + ")"
			}
			if m.InstanceId != "" {
				client += " (instance " + m.InstanceId + ")"
			}
			if info.GroupType == "consumer" {
				client += fmt.Sprintf(" (epoch %d, %s)", m.MemberEpoch, m.MemberState)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberId, client, strings.Join(m.Topics, ","), strings.Join(parts, " "))
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tEND\tLEO\tLAG\tOWNER")
		for _, p := range info.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Topic, p.Partition, p.Committed, p.End, p.LogEnd, p.Lag, p.Owner)
		}
		return tw.Flush()
	case "delete":
		if len(pos) != 1 {
			return usageErr("want exactly one group")
		}
		if err := admin.DeleteGroup(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted group %s\n", pos[0])
		return nil
	case "reset-offsets":
		if len(pos) != 1 || *topic == "" {
			return usageErr("want a group and --topic")
		}
		var to client.Offset
		n := 0
		if *toEarliest {
			to, n = client.AtStart(), n+1
		}
		if *toLatest {
			to, n = client.AtEnd(), n+1
		}
		if *toOffset >= 0 {
			to, n = client.AtOffset(*toOffset), n+1
		}
		if *toDatetime != "" {
			ms, err := parseTimestamp(*toDatetime)
			if err != nil {
				return usageErr("--to-datetime: %v", err)
			}
			to, n = client.AtTimestamp(time.UnixMilli(ms)), n+1
		}
		if *byDuration < 0 {
			return usageErr("--by-duration %v: want a positive duration", *byDuration)
		}
		if *byDuration > 0 {
			to, n = client.AtTimestamp(time.Now().Add(-*byDuration)), n+1
		}
		if n != 1 {
			return usageErr("want exactly one of --to-earliest, --to-latest, --to-offset N, --to-datetime TIME, --by-duration D")
		}
		offsets, err := admin.ResetOffsets(ctx, pos[0], *topic, to)
		if err != nil {
			return err
		}
		for p := int32(0); p < int32(len(offsets)); p++ {
			fmt.Fprintf(stdout, "%s %d -> %d\n", *topic, p, offsets[p])
		}
		return nil
	case "delete-offsets":
		if len(pos) != 1 || *topic == "" {
			return usageErr("want a group and --topic")
		}
		var only []int32
		if partition.set {
			only = []int32{partition.n}
		}
		results, err := admin.DeleteOffsets(ctx, pos[0], *topic, only...)
		if err != nil {
			return err
		}
		var failed error
		for _, p := range slices.Sorted(maps.Keys(results)) {
			if err := results[p]; err != nil {
				fmt.Fprintf(stdout, "%s %d: %v\n", *topic, p, err)
				failed = fmt.Errorf("some offsets were kept: %w", err)
				continue
			}
			fmt.Fprintf(stdout, "%s %d: deleted\n", *topic, p)
		}
		return failed
	}
	return usageErr("unknown group command %q: want list, describe, delete, reset-offsets or delete-offsets", sub)
}

type groupListJSON struct {
	Group       string `json:"group"`
	State       string `json:"state"`
	Members     int32  `json:"members"`
	Coordinator int32  `json:"coordinator"`
	Type        string `json:"type,omitempty"`
}

type groupDescJSON struct {
	Group       string               `json:"group"`
	State       string               `json:"state"`
	Generation  int32                `json:"generation"`
	Assignor    string               `json:"assignor"`
	Leader      string               `json:"leader"`
	Coordinator int32                `json:"coordinator"`
	Members     []groupMemberJSON    `json:"members"`
	Partitions  []groupPartitionJSON `json:"partitions"`
	// Type is "consumer" for a group of Kafka's consumer protocol
	// (KIP-848), whose generation is the group epoch.
	Type            string `json:"type,omitempty"`
	AssignmentEpoch int32  `json:"assignment_epoch,omitempty"`
}

type groupMemberJSON struct {
	MemberID string             `json:"member_id"`
	ClientID string             `json:"client_id"`
	Topics   []string           `json:"topics"`
	Assigned map[string][]int32 `json:"assignment"`
	// A push subscriber: the actor the broker pushes records to.
	PushAddress string `json:"push_address,omitempty"`
	PushID      string `json:"push_id,omitempty"`
	// A static member's group instance id.
	InstanceID string `json:"instance_id,omitempty"`
	// Members of consumer-protocol groups: epoch, reconciliation state,
	// subscription expression and target assignment.
	Epoch       int32              `json:"member_epoch,omitempty"`
	MemberState string             `json:"member_state,omitempty"`
	Regex       string             `json:"regex,omitempty"`
	Target      map[string][]int32 `json:"target,omitempty"`
}

type groupPartitionJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	LogEnd    int64  `json:"log_end"`
	Lag       int64  `json:"lag"`
	Owner     string `json:"owner"`
}

func groupJSON(info *client.GroupInfo) groupDescJSON {
	out := groupDescJSON{Group: info.Group, State: info.State, Generation: info.Generation, Assignor: info.Assignor,
		Leader: info.LeaderId, Coordinator: info.Coordinator, Members: []groupMemberJSON{}, Partitions: []groupPartitionJSON{},
		Type: info.GroupType, AssignmentEpoch: info.AssignmentEpoch}
	for _, m := range info.Members {
		mj := groupMemberJSON{MemberID: m.MemberId, ClientID: m.ClientId, Topics: nonNil(m.Topics),
			Assigned: map[string][]int32{}, PushAddress: m.PushAddress, PushID: m.PushId, InstanceID: m.InstanceId,
			Epoch: m.MemberEpoch, MemberState: m.MemberState, Regex: m.Regex}
		if info.GroupType == "consumer" {
			mj.Target = map[string][]int32{}
			for _, tps := range m.Target {
				mj.Target[tps.Topic] = append(mj.Target[tps.Topic], tps.Partitions...)
			}
		}
		for _, tps := range m.Assignment {
			mj.Assigned[tps.Topic] = append(mj.Assigned[tps.Topic], tps.Partitions...)
		}
		out.Members = append(out.Members, mj)
	}
	for _, p := range info.Partitions {
		out.Partitions = append(out.Partitions, groupPartitionJSON{Topic: p.Topic, Partition: p.Partition,
			Committed: p.Committed, End: p.End, LogEnd: p.LogEnd, Lag: p.Lag, Owner: p.Owner})
	}
	return out
}
