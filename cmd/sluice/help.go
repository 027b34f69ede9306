package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// helpTopic is the help of one command or subcommand; its flags come from
// the command's own flag set, so they cannot drift from what it parses.
type helpTopic struct {
	path     string // "topic create"
	args     string // what follows the path in the synopsis
	short    string // one line, for lists of commands
	long     string // what the command does and what its arguments mean
	examples []string
}

// groups are the commands that only hold subcommands.
var groups = []helpTopic{
	{path: "topic", short: "Create, list, describe, change and delete topics"},
	{path: "group", short: "List, describe and delete consumer groups; reset or delete their offsets"},
	{path: "cluster", short: "Show the cluster, move partitions between its brokers"},
	{path: "acl", short: "Manage ACLs (a cluster with TLS)"},
	{path: "quota", short: "Manage client quotas: bytes per second a user or client id may produce or fetch"},
	{path: "user", short: "Manage users that log in with a token or a password (a cluster with TLS)"},
	{path: "certs", short: "Write throwaway certificates for trying TLS"},
	{path: "bench", short: "Measure produce or consume throughput and latency"},
}

// helpTopics are every command that runs, in the order the top-level help
// lists them.
var helpTopics = []helpTopic{
	{path: "broker", args: "[flags]", short: "Start a broker (a single embedded node unless --consul is given)",
		long: "Runs a broker until Ctrl-C or SIGTERM. Without --consul it is a cluster of one that\n" +
			"needs nothing else; with --consul ADDR brokers of the same --cluster find each other\n" +
			"there. Clients reach it at --addr, Kafka clients at --kafka-addr, browsers and\n" +
			"Prometheus at --http.",
		examples: []string{
			"sluice broker",
			"sluice broker --data ./data2 --addr 127.0.0.1:9480 --http 127.0.0.1:10480",
			"sluice broker --id 1 --consul 127.0.0.1:8500 --cluster prod --addr 10.0.0.5:9470",
		}},
	{path: "topic create", args: "NAME [flags]", short: "Create a topic",
		long: "NAME is the new topic's name: letters, digits, '.', '_' and '-', at most 249.",
		examples: []string{
			"sluice topic create orders --partitions 6 --replicas 3",
			"sluice topic create logs --config retention.ms=3600000 --config max.message.bytes=4194304",
		}},
	{path: "topic list", args: "[flags]", short: "List topics",
		examples: []string{"sluice topic list", "sluice topic list --internal --format json"}},
	{path: "topic describe", args: "NAME... | --all [flags]", short: "Show partitions: leader, replicas, ISR, log start, LEO, HW",
		long:     "NAME names a topic; several may be given, or --all for every topic.",
		examples: []string{"sluice topic describe orders", "sluice topic describe --all --format json"}},
	{path: "topic offsets", args: "NAME [flags]", short: "Per partition: the offset at earliest, latest, max-timestamp or a time",
		examples: []string{"sluice topic offsets orders", "sluice topic offsets orders --time 2026-12-01T00:00:00Z"}},
	{path: "topic delete", args: "NAME [flags]", short: "Delete a topic and its data",
		examples: []string{"sluice topic delete orders"}},
	{path: "topic alter-config", args: "NAME --set KEY=VALUE | --delete KEY [flags]", short: "Change a topic's configuration",
		long:     "Sets and deletes in one change; a deleted key goes back to the broker's default.",
		examples: []string{"sluice topic alter-config orders --set retention.ms=86400000 --delete max.message.bytes"}},
	{path: "topic add-partitions", args: "NAME --to N [flags]", short: "Grow a topic to N partitions",
		long:     "Keys hash to partitions by their count: after growing, a key may go to a new partition.",
		examples: []string{"sluice topic add-partitions orders --to 12"}},
	{path: "topic elect-leaders", args: "[TOPIC[:P,P...]]... [flags]", short: "Give partitions back to their preferred replicas",
		long: "A partition's preferred replica is the first of its replicas; it takes the lead if it is alive\n" +
			"and in the ISR (Kafka's preferred leader election). Without arguments: every partition.\n" +
			"The controller does the same by itself every --leader-imbalance-check-interval.",
		examples: []string{"sluice topic elect-leaders", "sluice topic elect-leaders orders payments:0,3"}},
	{path: "produce", args: "TOPIC [flags] < records", short: "Produce one record per line of stdin (or --file)",
		long: "Records with a key go to the partition of the key's murmur2 hash, as with Kafka;\n" +
			"keyless records fill a batch for one partition, then move on to another (Kafka's\n" +
			"sticky partitioner), so a few records usually land on one partition. Ctrl-C stops\n" +
			"reading, waits for the records already sent and says how many were acknowledged.",
		examples: []string{
			"echo hello | sluice produce orders",
			"sluice produce orders --key-delimiter : < keyed.txt",
			"sluice produce orders --file records.txt --acks 1 --compression zstd",
		}},
	{path: "consume", args: "TOPIC [flags]", short: "Print consumed records, one per line (--group G: as a group member)",
		long: "Starts at the end (only new records) unless --offset, --from-beginning or --timestamp\n" +
			"says otherwise; with --group, at the group's committed offsets.",
		examples: []string{
			"sluice consume orders --from-beginning",
			"sluice consume orders --group billing",
			"sluice consume orders --offset -10 --max 10 --format '%p/%o %k=%v\\n'",
		}},
	{path: "group list", args: "[flags]", short: "List consumer groups",
		examples: []string{"sluice group list"}},
	{path: "group describe", args: "GROUP [flags]", short: "Members, assignment, committed offset, end and lag per partition",
		examples: []string{"sluice group describe billing"}},
	{path: "group delete", args: "GROUP [flags]", short: "Delete a group without members, with its committed offsets",
		examples: []string{"sluice group delete billing"}},
	{path: "group reset-offsets", args: "GROUP --topic T --to-earliest|--to-latest|--to-offset N|--to-datetime TIME|--by-duration D [flags]",
		short:    "Move a group's committed offsets (the group must have no members)",
		examples: []string{"sluice group reset-offsets billing --topic orders --to-earliest", "sluice group reset-offsets billing --topic orders --by-duration 1h"}},
	{path: "group delete-offsets", args: "GROUP --topic T [--partition P] [flags]", short: "Delete a group's committed offsets of a topic",
		examples: []string{"sluice group delete-offsets billing --topic orders", "sluice group delete-offsets billing --topic orders --partition 0"}},
	{path: "cluster info", args: "[flags]", short: "Brokers (id, address, state, version), controller, metadata store",
		examples: []string{"sluice cluster info", "sluice cluster info --format json"}},
	{path: "cluster config", args: "[set NAME=VALUE... | delete NAME...] [--broker-id N] [flags]", short: "List, set or delete dynamic broker settings",
		long: "Settings changed while brokers run (Kafka's dynamic broker configs), as the cluster's defaults or,\n" +
			"with --broker-id, for one broker; a broker's own value wins over the default, which wins over its\n" +
			"flags. Without set or delete, lists what is set and the names that can be.",
		examples: []string{"sluice cluster config", "sluice cluster config set log.retention.ms=86400000",
			"sluice cluster config set max.connections.per.ip=500 --broker-id 2", "sluice cluster config delete log.retention.ms"}},
	{path: "cluster rebalance", args: "[--dry-run] [--no-wait] [flags]", short: "Spread replicas and leaders evenly over the live brokers",
		long: "Plans the fewest replica moves that leave every live broker within one replica of the others\n" +
			"(replicas of a partition on as many racks as before), prints the plan, starts the moves and waits\n" +
			"until they are done, then gives each partition to its new preferred leader. Run it after adding\n" +
			"a broker. Ctrl-C stops the waiting, not the moves.",
		examples: []string{"sluice cluster rebalance --dry-run", "sluice cluster rebalance"}},
	{path: "cluster drain", args: "BROKER [--dry-run] [--no-wait] [flags]", short: "Move every replica off a broker before it is stopped",
		long: "Moves leadership off the broker first (no data moves), then every replica onto the other live\n" +
			"brokers, evenly, and says when the broker holds nothing and can be stopped.",
		examples: []string{"sluice cluster drain 3", "sluice cluster drain 3 --dry-run"}},
	{path: "cluster reassign", args: "TOPIC:PARTITION=BROKER,BROKER... | --cancel TOPIC:PARTITION... [flags]", short: "Move partitions to the brokers named",
		long: "The first broker named is the partition's preferred leader. New replicas copy the log from the\n" +
			"leader while the old ones serve; then the old ones are removed and their brokers delete their copy.\n" +
			"A different number of brokers changes the partition's replication factor.",
		examples: []string{"sluice cluster reassign orders:0=1,2,4", "sluice cluster reassign --cancel orders:0"}},
	{path: "cluster reassignments", args: "[flags]", short: "List the partitions moving between brokers",
		examples: []string{"sluice cluster reassignments", "sluice cluster reassignments --format json"}},
	{path: "acl add", args: "--allow-principal P|--deny-principal P --operation OP --topic T|--group G|--cluster [flags]", short: "Add ACL rules",
		examples: []string{"sluice acl add --allow-principal User:alice --operation read --operation describe --topic orders"}},
	{path: "acl remove", args: "[filters] [flags]", short: "Remove the ACL rules that match the filters",
		examples: []string{"sluice acl remove --principal User:alice --topic orders"}},
	{path: "acl list", args: "[filters] [flags]", short: "List ACL rules",
		examples: []string{"sluice acl list", "sluice acl list --principal User:alice"}},
	{path: "quota set", args: "KEY=BYTES_PER_SECOND... --user U|--default-user|--client-id C|--default-client-id [flags]",
		short: "Set quotas (producer_byte_rate, consumer_byte_rate) of a user, a client id, or both",
		long: "Kafka's client quotas: a client over its rate is throttled, its answers delayed and\n" +
			"throttle_time_ms set. A user's client id quota is the most specific; the defaults hold for every\n" +
			"user (client id) without a quota of its own.",
		examples: []string{"sluice quota set producer_byte_rate=1048576 --user alice",
			"sluice quota set consumer_byte_rate=10485760 --default-client-id"}},
	{path: "quota delete", args: "KEY... --user U|--default-user|--client-id C|--default-client-id [flags]", short: "Delete quotas",
		examples: []string{"sluice quota delete producer_byte_rate --user alice"}},
	{path: "quota list", args: "[flags]", short: "List client quotas",
		examples: []string{"sluice quota list", "sluice quota list --format json"}},
	{path: "user create", args: "NAME [flags]", short: "Create a user and print its token (shown once)",
		examples: []string{"sluice user create alice"}},
	{path: "user password", args: "NAME [flags] < password", short: "Set the SCRAM password a user logs in with on the Kafka listener",
		examples: []string{"sluice user password alice", "echo \"$PASSWORD\" | sluice user password alice --mechanism SCRAM-SHA-512",
			"sluice user password alice --delete"}},
	{path: "user delete", args: "NAME [flags]", short: "Delete a user; its token and passwords stop working",
		examples: []string{"sluice user delete alice"}},
	{path: "user list", args: "[flags]", short: "List users",
		examples: []string{"sluice user list"}},
	{path: "user whoami", args: "[flags]", short: "Show the principal the cluster sees you as",
		examples: []string{"sluice user whoami --tls-ca ca.crt --token $TOKEN"}},
	{path: "certs dev", args: "--out DIR [flags]", short: "Write a throwaway CA and broker and user certificates",
		examples: []string{"sluice certs dev --out ./certs --brokers 3 --users admin,alice"}},
	{path: "bench produce", args: "[flags]", short: "Produce records as fast as possible; print throughput and latency",
		examples: []string{"sluice bench produce --records 1000000 --size 1024 --acks all"}},
	{path: "bench consume", args: "[flags]", short: "Consume a topic from the start; print throughput",
		examples: []string{"sluice bench consume --topic bench"}},
	{path: "dev-cluster", args: "[flags]", short: "Run Consul and a local cluster of brokers until Ctrl-C",
		examples: []string{"sluice dev-cluster", "sluice dev-cluster --brokers 5 --secure"}},
	{path: "version", args: "[flags]", short: "Version, commit and Go version of this binary",
		examples: []string{"sluice version"}},
	{path: "completion", args: "bash|zsh|fish", short: "Print a shell completion script",
		long: "Load it in the running shell, or add the line to the shell's start-up file.",
		examples: []string{
			"source <(sluice completion bash)",
			"source <(sluice completion zsh)",
			"sluice completion fish | source",
		}},
}

func findTopic(list []helpTopic, path string) (helpTopic, bool) {
	i := slices.IndexFunc(list, func(h helpTopic) bool { return h.path == path })
	if i < 0 {
		return helpTopic{}, false
	}
	return list[i], true
}

// subcommandsOf returns the subcommands of group, in order.
func subcommandsOf(group string) []helpTopic {
	var out []helpTopic
	for _, h := range helpTopics {
		if strings.HasPrefix(h.path, group+" ") {
			out = append(out, h)
		}
	}
	return out
}

// commandFooter says what every client command shares.
const commandFooter = `Every client command takes --broker HOST:PORT (env SLUICE_BROKER, default 127.0.0.1:9470) and, for a
cluster with TLS, --tls-ca FILE with --tls-cert FILE --tls-key FILE or --token T. Every flag of every
command can be set in the environment as SLUICE_<FLAG>, upper case with - as _ (--max-connections:
SLUICE_MAX_CONNECTIONS); the command line wins.
`

// printUsage writes the top-level help: every command with a line each.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "sluice: a durable, replicated, partitioned log broker.\n\nUsage:\n  sluice COMMAND [SUBCOMMAND] [ARGS] [flags]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	listed := map[string]bool{}
	for _, h := range helpTopics {
		name, _, _ := strings.Cut(h.path, " ")
		if listed[name] {
			continue
		}
		listed[name] = true
		if g, ok := findTopic(groups, name); ok {
			fmt.Fprintf(tw, "  %s\t%s\n", name, g.short)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, h.short)
	}
	tw.Flush()
	fmt.Fprint(w, "\n"+commandFooter+"\nRun 'sluice COMMAND -h' for a command's arguments, flags and examples.\n")
}

// printGroupHelp writes a group's help: its subcommands.
func printGroupHelp(w io.Writer, group string) {
	g, _ := findTopic(groups, group)
	fmt.Fprintf(w, "%s.\n\nUsage:\n  sluice %s COMMAND [ARGS] [flags]\n\nCommands:\n", g.short, group)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, s := range subcommandsOf(group) {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimPrefix(s.path, group+" "), s.short)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'sluice %s COMMAND -h' for a command's arguments, flags and examples.\n", group)
}

// printCommandHelp writes a command's help: synopsis, what it does, its
// flags (from fs) and examples.
func printCommandHelp(w io.Writer, path string, fs *flag.FlagSet) {
	h, ok := findTopic(helpTopics, path)
	if !ok {
		h = helpTopic{path: path, args: "[flags]"}
	}
	if h.short != "" {
		fmt.Fprintf(w, "%s.\n\n", h.short)
	}
	fmt.Fprintf(w, "Usage:\n  sluice %s %s\n", path, h.args)
	if h.long != "" {
		fmt.Fprintf(w, "\n%s\n", h.long)
	}
	if fs != nil {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fs)
	}
	if len(h.examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, e := range h.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// printFlags lists fs's flags as --name TYPE, what it does and its default.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if typ == "value" {
			typ = "string" // a flag of its own type reads a string too
		}
		name := "--" + f.Name
		if typ != "" {
			name += " " + typ
		}
		switch {
		case zeroDefault(f):
		case typ == "string":
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush()
}

// zeroDefault reports whether f's default is its type's zero value, which
// help does not show.
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]", "map[]", "<nil>":
		return true
	}
	return false
}

// flagOutput is a flag set's error output: it remembers whether the flag
// package has just written an error, so that the Usage that follows
// prints a hint there rather than the help a -h asks for.
type flagOutput struct {
	w     io.Writer
	wrote bool
}

func (o *flagOutput) Write(p []byte) (int, error) {
	o.wrote = true
	return o.w.Write(p)
}

// flagSetSeen, when set, is given each flag set a command builds before it
// parses: completion lists a command's flags from it.
var flagSetSeen func(path string, fs *flag.FlagSet)

// newFlagSet is the flag set of the command at path ("topic create"): -h
// prints its help to stdout; a bad flag, the error and a hint to stderr.
func newFlagSet(path string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+path, flag.ContinueOnError)
	out := &flagOutput{w: stderr}
	fs.SetOutput(out)
	fs.Usage = func() {
		if flagSetSeen != nil {
			flagSetSeen(path, fs)
			return
		}
		if out.wrote {
			fmt.Fprintf(stderr, "Run 'sluice %s -h' for its arguments, flags and examples.\n", path)
			return
		}
		printCommandHelp(stdout, path, fs)
	}
	return fs
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// runGroupCommand checks a group command's subcommand before the group's
// own code runs: help for the group, or a clear refusal. It reports
// whether the command should go on.
func runGroupCommand(group string, args []string, stdout, stderr io.Writer) (code int, goOn bool) {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "sluice %s: which command?\n\n", group)
		printGroupHelp(stderr, group)
		return 2, false
	}
	if isHelp(args[0]) {
		if len(args) > 1 {
			if _, ok := findTopic(helpTopics, group+" "+args[1]); ok {
				return run([]string{group, args[1], "-h"}, nil, stdout, stderr), false
			}
		}
		printGroupHelp(stdout, group)
		return 0, false
	}
	if _, ok := findTopic(helpTopics, group+" "+args[0]); !ok {
		fmt.Fprintf(stderr, "sluice %s: unknown command %q\n\n", group, args[0])
		printGroupHelp(stderr, group)
		return 2, false
	}
	return 0, true
}

// runHelp is `sluice help [COMMAND [SUBCOMMAND]]`.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stdout)
		return 0
	}
	if _, ok := findTopic(groups, args[0]); ok {
		if len(args) == 1 {
			printGroupHelp(stdout, args[0])
			return 0
		}
		return run([]string{args[0], args[1], "-h"}, nil, stdout, stderr)
	}
	if _, ok := findTopic(helpTopics, args[0]); !ok {
		fmt.Fprintf(stderr, "sluice help: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	return run([]string{args[0], "-h"}, nil, stdout, stderr)
}
