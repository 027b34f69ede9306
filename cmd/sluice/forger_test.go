package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/transport"
)

// forgeEnv makes the test binary a hostile peer: a protoactor node of its
// own that sends messages (types in SLUICE_FORGE_TYPES, comma-separated;
// protojson bodies on stdin, one a line), all at once and in that order, to
// the actor SLUICE_FORGE_ACTOR at the address in forgeEnv, and prints each
// answer as it comes: request index, time since sending, type, protojson.
const forgeEnv = "SLUICE_TEST_FORGE_ADDR"

func runForger() int {
	var msgs []proto.Message
	bodies := strings.Split(strings.TrimSpace(readAll(os.Stdin)), "\n")
	for i, name := range strings.Split(os.Getenv("SLUICE_FORGE_TYPES"), ",") {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
		if err != nil || i >= len(bodies) {
			fmt.Println("error", name, err)
			return 1
		}
		m := mt.New().Interface()
		if err := protojson.Unmarshal([]byte(bodies[i]), m); err != nil {
			fmt.Println("error", err)
			return 1
		}
		msgs = append(msgs, m)
	}
	node, err := transport.Start(transport.Config{Host: "127.0.0.1", Security: forgerSecurity()}, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	target := actor.NewPID(os.Getenv(forgeEnv), os.Getenv("SLUICE_FORGE_ACTOR"))
	type answer struct {
		i   int
		res any
		err error
	}
	answers := make(chan answer, len(msgs))
	start := time.Now()
	for i, m := range msgs {
		p := reply.NewPending(node.System, 30*time.Second)
		node.System.Root.RequestWithCustomSender(target, m, p.PID())
		go func() { res, err := p.Wait(); answers <- answer{i, res, err} }()
	}
	for range msgs {
		a := <-answers
		m, ok := a.res.(proto.Message)
		if a.err != nil || !ok {
			fmt.Printf("error request %d: %v %T\n", a.i, a.err, a.res)
			return 1
		}
		js, _ := protojson.Marshal(m)
		fmt.Printf("%d %d %s %s\n", a.i, time.Since(start).Nanoseconds(), proto.MessageName(m), js)
	}
	return 0
}

// forgeTLSEnv gives a forger (or victim, or injector) process credentials:
// "cert,key,ca" files, or ",,ca,token"; a fifth field "broker" makes it
// dial as a broker does (accepting user certificates of the CA).
const forgeTLSEnv = "SLUICE_FORGE_TLS"

func forgerSecurity() *transport.Security {
	v := os.Getenv(forgeTLSEnv)
	if v == "" {
		return nil
	}
	f := append(strings.Split(v, ","), "", "", "", "")
	role := transport.RoleClient
	if f[4] == "broker" {
		role = transport.RoleBroker
	}
	return &transport.Security{Role: role, CertFile: f[0], KeyFile: f[1], CAFile: f[2], Token: f[3]}
}

func readAll(f *os.File) string {
	var b bytes.Buffer
	_, _ = b.ReadFrom(f)
	return b.String()
}

// forged is one answer a forger process got.
type forged struct {
	index int           // of the request it answers
	after time.Duration // since the requests were sent
	msg   proto.Message
}

// forgeAll sends msgs from a separate process to the actor id at addr, in
// order and without waiting, and returns the answers in the order they came.
func forgeAll(t *testing.T, addr, id string, msgs ...proto.Message) []forged {
	t.Helper()
	return forgeAllAs(t, "", addr, id, msgs...)
}

// forgeAs is forge from a process with credentials (forgeTLSEnv's format).
func forgeAs(t *testing.T, creds, addr, id string, msg proto.Message) proto.Message {
	t.Helper()
	return forgeAllAs(t, creds, addr, id, msg)[0].msg
}

func forgeAllAs(t *testing.T, creds, addr, id string, msgs ...proto.Message) []forged {
	t.Helper()
	var names []string
	var in bytes.Buffer
	for _, m := range msgs {
		js, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, string(proto.MessageName(m)))
		in.Write(js)
		in.WriteByte('\n')
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), forgeEnv+"="+addr, "SLUICE_FORGE_ACTOR="+id, "SLUICE_FORGE_TYPES="+strings.Join(names, ","),
		forgeTLSEnv+"="+creds)
	cmd.Stdin = &in
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("forger: %v\n%s%s", err, out.String(), errOut.String())
	}
	var answers []forged
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var a forged
		var ns int64
		var name, js string
		if _, err := fmt.Sscan(line, &a.index, &ns, &name); err != nil {
			t.Fatalf("forger printed %q", line)
		}
		js = line[strings.Index(line, name)+len(name)+1:]
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
		if err != nil {
			t.Fatal(err)
		}
		a.msg = mt.New().Interface()
		if err := protojson.Unmarshal([]byte(js), a.msg); err != nil {
			t.Fatal(err)
		}
		a.after = time.Duration(ns)
		answers = append(answers, a)
	}
	if len(answers) != len(msgs) {
		t.Fatalf("forger answered %d of %d requests:\n%s", len(answers), len(msgs), out.String())
	}
	return answers
}

// forge sends msg from a separate process to the actor id at addr and
// returns the answer.
func forge(t *testing.T, addr, id string, msg proto.Message) proto.Message {
	t.Helper()
	return forgeAll(t, addr, id, msg)[0].msg
}
