// Command sluice runs a Sluice broker and talks to one: topics, producing,
// consuming and benchmarks. Run `sluice help` for the commands.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/sluicemq/sluice/client"
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
  sluice dev-cluster [--brokers 3]       run Consul and a local cluster of brokers until Ctrl-C (--secure: with TLS)
  sluice acl add|remove|list [flags]     manage ACLs: --allow-principal P --operation OP --topic T|--group G|--cluster
  sluice user create|delete|list NAME    manage users that authenticate with a token; 'user whoami' shows your principal
  sluice certs dev --out DIR [--brokers 3] [--users admin]   write a throwaway CA and broker/user certificates for trying TLS

Every client command takes --broker HOST:PORT (env SLUICE_BROKER, default 127.0.0.1:9470) and, for a
cluster with TLS, --tls-ca FILE with --tls-cert FILE --tls-key FILE or --token T (env SLUICE_TLS_CA,
SLUICE_TLS_CERT, SLUICE_TLS_KEY, SLUICE_TOKEN).
Run 'sluice COMMAND -h' for a command's flags.
`

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "broker" || os.Args[1] == "bench") {
		freeMemoryLazily()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks an error caused by the command line; the exit code is 2,
// as for Go's flag package.
var errUsage = errors.New("usage")

// errBadFlag is a flag the flag package refused and has already reported.
var errBadFlag = errors.New("bad flag")

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
	case "acl":
		err = runACL(args[1:], stdout, stderr)
	case "user":
		err = runUser(args[1:], stdout, stderr)
	case "dev-cluster":
		err = runDevCluster(args[1:], stdout, stderr)
	case "certs":
		err = runCerts(args[1:], stdout, stderr)
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
	case errors.Is(err, errBadFlag):
		return 2
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
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", errBadFlag, err)
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

// clientConn is how a client command reaches the cluster: --broker and
// the TLS settings, each with its SLUICE_* environment default.
type clientConn struct {
	broker                 *string
	tlsCert, tlsKey, tlsCA *string
	token                  *string
}

// connFlags adds --broker (env SLUICE_BROKER, default 127.0.0.1:9470) and
// the TLS flags to fs.
func connFlags(fs *flag.FlagSet) *clientConn {
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	return &clientConn{
		broker:  fs.String("broker", env("SLUICE_BROKER", "127.0.0.1:9470"), "address of any broker (env SLUICE_BROKER)"),
		tlsCert: fs.String("tls-cert", env("SLUICE_TLS_CERT", ""), "client certificate (PEM) for mutual TLS (env SLUICE_TLS_CERT)"),
		tlsKey:  fs.String("tls-key", env("SLUICE_TLS_KEY", ""), "key of --tls-cert (env SLUICE_TLS_KEY)"),
		tlsCA:   fs.String("tls-ca", env("SLUICE_TLS_CA", ""), "the cluster's CA certificates (PEM) (env SLUICE_TLS_CA)"),
		token:   fs.String("token", env("SLUICE_TOKEN", ""), "bearer token of a user made by 'sluice user create', over TLS (env SLUICE_TOKEN)"),
	}
}

// opt is the client option of the connection settings, with logger.
func (c *clientConn) opt(logger *slog.Logger) client.Opt {
	opts := []client.Opt{client.WithLogger(logger)}
	if *c.tlsCert != "" || *c.tlsKey != "" || *c.tlsCA != "" || *c.token != "" {
		opts = append(opts, client.TLS(*c.tlsCert, *c.tlsKey, *c.tlsCA))
	}
	if *c.token != "" {
		opts = append(opts, client.Token(*c.token))
	}
	return client.Options(opts...)
}

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// unescape turns \n, \t and \\ in a format string into their characters.
func unescape(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	_, _ = w.Write(append(b, '\n'))
}
