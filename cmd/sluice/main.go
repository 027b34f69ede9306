// Command sluice runs a Sluice broker and talks to one: topics, producing,
// consuming and benchmarks. Run `sluice help` for the commands.
package main

import (
	"cmp"
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

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "broker" || os.Args[1] == "bench") {
		freeMemoryLazily()
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks an error caused by the command line; the exit code is 2,
// as for Go's flag package.
var errUsage = errors.New("usage")

// errAlreadyReported fails a command that has said why on stderr itself.
var errAlreadyReported = errors.New("already reported")

// errBadFlag is a flag the flag package refused and has already reported.
var errBadFlag = errors.New("bad flag")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	if _, ok := findTopic(groups, args[0]); ok {
		if code, goOn := runGroupCommand(args[0], args[1:], stdout, stderr); !goOn {
			return code
		}
	}
	var err error
	switch args[0] {
	case "broker":
		err = runBroker(args[1:], stdout, stderr)
	case "topic":
		err = runTopic(args[1:], stdout, stderr)
	case "produce":
		err = runProduce(args[1:], stdin, stdout, stderr)
	case "consume":
		err = runConsume(args[1:], stdout, stderr)
	case "group":
		err = runGroup(args[1:], stdout, stderr)
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "acl":
		err = runACL(args[1:], stdout, stderr)
	case "quota":
		err = runQuota(args[1:], stdout, stderr)
	case "user":
		err = runUser(args[1:], stdin, stdout, stderr)
	case "dev-cluster":
		err = runDevCluster(args[1:], stdout, stderr)
	case "certs":
		err = runCerts(args[1:], stdout, stderr)
	case "cluster":
		err = runCluster(args[1:], stdout, stderr)
	case "version", "--version":
		err = runVersion(args[1:], stdout, stderr)
	case "completion":
		err = runCompletion(args[1:], stdout)
	case completeCommand:
		return runComplete(args[1:], stdout)
	case "help", "-h", "--help", "-help":
		return runHelp(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errBadFlag):
		return 2
	case errors.Is(err, errAlreadyReported):
		return 1
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
	if err := applyEnv(fs); err != nil {
		return nil, err
	}
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

// envName is the environment variable that sets a flag: SLUICE_ and the
// flag's name in upper case, with - as _ (--tls-cert: SLUICE_TLS_CERT).
func envName(flagName string) string {
	return "SLUICE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets each flag of fs that has a SLUICE_* variable in the
// environment; the command line, parsed after, overrides it.
func applyEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok || err != nil {
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = usageErr("%s=%q: %v", envName(f.Name), v, e)
		}
	})
	return err
}

// clientConn is how a client command reaches the cluster: --broker and
// the TLS settings, each with its SLUICE_* environment default.
type clientConn struct {
	broker                 *string
	tlsCert, tlsKey, tlsCA *string
	token                  *string
	// listen and advertise choose answers over connections brokers open
	// to the CLI instead of over its own (sessions).
	listen, advertise *string
}

// connFlags adds --broker (env SLUICE_BROKER, default 127.0.0.1:9470) and
// the TLS flags to fs.
func connFlags(fs *flag.FlagSet) *clientConn {
	return &clientConn{
		broker:  fs.String("broker", "127.0.0.1:9470", "address of any broker, or several separated by commas (env SLUICE_BROKER)"),
		tlsCert: fs.String("tls-cert", "", "client certificate (PEM) for mutual TLS (env SLUICE_TLS_CERT)"),
		tlsKey:  fs.String("tls-key", "", "key of --tls-cert (env SLUICE_TLS_KEY)"),
		tlsCA:   fs.String("tls-ca", "", "the cluster's CA certificates (PEM) (env SLUICE_TLS_CA)"),
		token:   fs.String("token", "", "bearer token of a user made by 'sluice user create', over TLS (env SLUICE_TOKEN)"),
		listen: fs.String("listen", "", "host:port to listen on for answers brokers send over connections they open to it "+
			"(default: answers come over the connections the command opens)"),
		advertise: fs.String("advertise", "", "host:port brokers connect to for --listen, when it differs"),
	}
}

// parseClientArgs is parseArgs for a client command, and checks that its
// TLS settings make sense together.
func parseClientArgs(fs *flag.FlagSet, c *clientConn, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	tls := *c.tlsCert != "" || *c.tlsKey != "" || *c.tlsCA != "" || *c.token != ""
	switch {
	case tls && *c.tlsCA == "":
		return nil, usageErr("TLS needs the cluster's CA: pass --tls-ca or set SLUICE_TLS_CA")
	case (*c.tlsCert == "") != (*c.tlsKey == ""):
		return nil, usageErr("--tls-cert and --tls-key go together (SLUICE_TLS_CERT, SLUICE_TLS_KEY)")
	case tls && *c.tlsCert == "" && *c.token == "":
		return nil, usageErr("TLS without a client certificate needs a token: pass --token or set SLUICE_TOKEN (or --tls-cert and --tls-key)")
	}
	return pos, nil
}

// opt is the client option of the connection settings, with logger.
func (c *clientConn) opt(logger *slog.Logger) client.Opt {
	opts := []client.Opt{client.WithLogger(logger)}
	if *c.listen != "" || *c.advertise != "" {
		opts = append(opts, client.Sessions(false), client.ListenAddr(cmp.Or(*c.listen, "0.0.0.0:0")), client.AdvertisedAddr(*c.advertise))
	}
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
