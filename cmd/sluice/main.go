// Command sluice runs a Sluice broker and talks to one: topics, producing,
// consuming and benchmarks. Run `sluice help` for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `sluice: a durable, replicated, partitioned log broker.

Usage:
  sluice broker [flags]                  start a broker (embedded single node by default)
  sluice topic create NAME [flags]       create a topic
  sluice topic list                      list topics
  sluice topic describe NAME             show partitions: leader, replicas, ISR, log start, LEO, HW
  sluice topic delete NAME               delete a topic and its data
  sluice produce TOPIC [flags]           produce one record per stdin line
  sluice consume TOPIC [flags]           print consumed records, one per line (--group G: as a group member)
  sluice group list                      list consumer groups
  sluice group describe GROUP            members, assignment, committed offset, end and lag per partition
  sluice group reset-offsets GROUP --topic T --to-earliest|--to-latest|--to-offset N
  sluice bench produce|consume [flags]   measure throughput and latency
  sluice dev-cluster [--brokers 3]       run Consul and a local cluster of brokers until Ctrl-C

Every client command takes --broker HOST:PORT (env SLUICE_BROKER, default 127.0.0.1:9470).
Run 'sluice COMMAND -h' for a command's flags.
`

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "broker" || os.Args[1] == "bench") {
		freeMemoryLazily()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks an error caused by the command line; the exit code is 2.
var errUsage = errors.New("usage")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "broker":
		err = runBroker(args[1:], stderr)
	case "topic":
		err = runTopic(args[1:], stdout, stderr)
	case "produce":
		err = runProduce(args[1:], stdin, stderr)
	case "consume":
		err = runConsume(args[1:], stdout, stderr)
	case "group":
		err = runGroup(args[1:], stdout, stderr)
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "dev-cluster":
		err = runDevCluster(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "sluice %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "sluice %s: %v\n", args[0], err)
		return 1
	}
}

// parseArgs parses flags that may appear before, between or after
// positional arguments, and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// brokerFlag adds --broker with the SLUICE_BROKER default.
func brokerFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("SLUICE_BROKER")
	if def == "" {
		def = "127.0.0.1:9470"
	}
	return fs.String("broker", def, "address of any broker (env SLUICE_BROKER)")
}

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// unescape turns \n, \t and \\ in a format string into their characters.
func unescape(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
}
