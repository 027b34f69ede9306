package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runDevCluster starts a local Consul agent and n brokers on 127.0.0.1, each
// with its own data directory under --dir, and stops them all on Ctrl-C. A
// broker that dies is started again after --restart-delay, so failover can
// be tried by killing one.
func runDevCluster(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev-cluster", stdout, stderr)
	brokers := fs.Int("brokers", 3, "number of brokers")
	dir := fs.String("dir", "./sluice-cluster", "directory for Consul's and the brokers' data and logs")
	consulBin := fs.String("consul-bin", "", "consul binary (default: $SLUICE_CONSUL_BIN, the .ci/install-consul.sh cache, or consul on PATH)")
	consulPort := fs.Int("consul-port", 8500, "Consul HTTP port; its server and Serf ports are 200, 199 and 198 below it")
	basePort := fs.Int("base-port", 9471, "broker i listens on base-port + i - 1")
	kafkaBase := fs.Int("kafka-base-port", 9092, "broker i serves Kafka clients on kafka-base-port + i - 1 (0: no Kafka listener; with --secure it is TLS)")
	clusterName := fs.String("cluster", "dev", "cluster name")
	restartDelay := fs.Duration("restart-delay", 10*time.Second, "a broker that exits is started again after this pause (0: it stays down)")
	secure := fs.Bool("secure", false, "mutual TLS and ACLs: writes a throwaway CA and certificates to DIR/certs (kept across runs), User:admin is a super user")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *brokers < 1 || *brokers > 9 {
		return usageErr("--brokers %d: want 1 to 9", *brokers)
	}
	if *consulPort < 201 || *consulPort > 65535 {
		return usageErr("--consul-port %d: want 201 to 65535", *consulPort)
	}
	if *kafkaBase < 0 || *kafkaBase+*brokers-1 > 65535 {
		return usageErr("--kafka-base-port %d: want 0 (off) or 1 to %d", *kafkaBase, 65536-*brokers)
	}
	if *basePort < 1 || *basePort+*brokers-1 > 65535 {
		return usageErr("--base-port %d: want 1 to %d", *basePort, 65536-*brokers)
	}
	if *restartDelay < 0 {
		return usageErr("--restart-delay %s: want 0 or more", *restartDelay)
	}
	bin, err := findConsul(*consulBin)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	certs := filepath.Join(*dir, "certs")
	if *secure {
		if _, err := os.Stat(filepath.Join(certs, "ca.crt")); errors.Is(err, os.ErrNotExist) {
			if err := writeDevCerts(certs, 1, *brokers, []string{"admin"}, 30, false); err != nil {
				return err
			}
		}
		for i := 1; i <= *brokers; i++ {
			if _, err := os.Stat(filepath.Join(certs, fmt.Sprintf("broker-%d.crt", i))); err != nil {
				return fmt.Errorf("%s has no certificate for broker %d: remove the directory to make new ones", certs, i)
			}
		}
	}

	sup := newSupervisor()
	defer sup.stopAll()
	consulAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*consulPort))
	consul := &devProc{name: "consul", bin: bin, log: filepath.Join(*dir, "consul.log"), args: []string{
		"agent", "-server", "-bootstrap-expect", "1", "-data-dir", filepath.Join(*dir, "consul"),
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-http-port", strconv.Itoa(*consulPort),
		"-server-port", strconv.Itoa(*consulPort - 200), "-serf-lan-port", strconv.Itoa(*consulPort - 199),
		"-serf-wan-port", strconv.Itoa(*consulPort - 198),
		"-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1"}}
	if err := sup.start(consul); err != nil {
		return err
	}
	if err := waitConsul(consulAddr, 30*time.Second); err != nil {
		return fmt.Errorf("consul did not start (see %s): %w", consul.log, err)
	}
	fmt.Fprintf(stdout, "consul   http://%s\n", consulAddr)
	var seeds, kafkaSeeds []string
	for i := 1; i <= *brokers; i++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*basePort+i-1))
		name := fmt.Sprintf("broker-%d", i)
		p := &devProc{name: name, id: i, bin: self, log: filepath.Join(*dir, name+".log"), args: []string{
			"broker", "--consul", consulAddr, "--cluster", *clusterName, "--id", strconv.Itoa(i),
			"--data", filepath.Join(*dir, name), "--addr", addr}}
		if *kafkaBase > 0 {
			kafkaAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*kafkaBase+i-1))
			p.args = append(p.args, "--kafka-addr", kafkaAddr)
			kafkaSeeds = append(kafkaSeeds, kafkaAddr)
		}
		if *secure {
			p.args = append(p.args, "--tls-cert", filepath.Join(certs, name+".crt"), "--tls-key", filepath.Join(certs, name+".key"),
				"--tls-ca", filepath.Join(certs, "ca.crt"), "--super-users", "User:admin")
		}
		if err := sup.start(p); err != nil {
			return err
		}
		seeds = append(seeds, addr)
		fmt.Fprintf(stdout, "broker %d %s pid %d (log %s)\n", i, addr, p.pid(), p.log)
	}
	fmt.Fprintf(stdout, "\nexport SLUICE_BROKER=%s\n", strings.Join(seeds, ","))
	if len(kafkaSeeds) > 0 {
		fmt.Fprintf(stdout, "Kafka clients: %s  (kcat -b %s -L)\n", strings.Join(kafkaSeeds, ","), kafkaSeeds[0])
	}
	if *secure {
		abs, _ := filepath.Abs(certs)
		fmt.Fprintf(stdout, "export SLUICE_TLS_CERT=%s SLUICE_TLS_KEY=%s SLUICE_TLS_CA=%s  # as User:admin (super user)\n",
			filepath.Join(abs, "user-admin.crt"), filepath.Join(abs, "user-admin.key"), filepath.Join(abs, "ca.crt"))
	}
	fmt.Fprintf(stdout, "Kill a broker (kill -9 PID) to see its partitions fail over; it is started again after %s.\n", *restartDelay)
	fmt.Fprintf(stdout, "Ctrl-C stops the cluster; data stays in %s.\n", *dir)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	restart := make(chan *devProc)
	for {
		select {
		case <-sig:
			return nil
		case ex := <-sup.exited:
			if ex.proc == consul {
				return fmt.Errorf("consul exited (%v): stopping the brokers (see %s)", ex.err, consul.log)
			}
			if *restartDelay == 0 {
				fmt.Fprintf(stdout, "broker %d (pid %d) exited: %v; the other brokers keep serving, and it stays down (--restart-delay 0).\n",
					ex.proc.id, ex.pid, exitText(ex.err))
				continue
			}
			fmt.Fprintf(stdout, "broker %d (pid %d) exited: %v; the other brokers keep serving. Starting it again in %s.\n",
				ex.proc.id, ex.pid, exitText(ex.err), *restartDelay)
			p := ex.proc
			time.AfterFunc(*restartDelay, func() {
				select {
				case restart <- p:
				case <-sup.quit:
				}
			})
		case p := <-restart:
			if err := sup.start(p); err != nil {
				fmt.Fprintf(stdout, "broker %d did not start again: %v; trying again in %s.\n", p.id, err, *restartDelay)
				time.AfterFunc(*restartDelay, func() {
					select {
					case restart <- p:
					case <-sup.quit:
					}
				})
				continue
			}
			fmt.Fprintf(stdout, "broker %d started again (pid %d).\n", p.id, p.pid())
		}
	}
}

// exitText says how a process ended: "exit status 1", "signal: killed", or
// "exit status 0" for a clean stop.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// devProc is one process of the dev cluster; its output is appended to log,
// so a restarted broker's log follows the one before.
type devProc struct {
	name string
	id   int // broker id; 0 for Consul
	bin  string
	args []string
	log  string

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

func (p *devProc) pid() int { return p.cmd.Process.Pid }

// devExit reports that a process of the dev cluster ended.
type devExit struct {
	proc *devProc
	pid  int
	err  error
}

// supervisor starts the dev cluster's processes and reports each exit.
type supervisor struct {
	procs  []*devProc // in start order
	exited chan devExit
	quit   chan struct{}
}

func newSupervisor() *supervisor {
	return &supervisor{exited: make(chan devExit), quit: make(chan struct{})}
}

// start runs p (again), and reports on exited when it ends.
func (s *supervisor) start(p *devProc) error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	if p.cmd == nil {
		s.procs = append(s.procs, p)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		logf.Close()
		close(done)
		select {
		case s.exited <- devExit{proc: p, pid: cmd.Process.Pid, err: err}:
		case <-s.quit:
		}
	}()
	return nil
}

// stopAll stops the brokers, then Consul: SIGTERM, and SIGKILL for a
// process still running 30 s later.
func (s *supervisor) stopAll() {
	close(s.quit)
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// findConsul returns the consul binary to run.
func findConsul(flagValue string) (string, error) {
	candidates := []string{flagValue, os.Getenv("SLUICE_CONSUL_BIN")}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".cache", "sluice", "consul-1.14.11", "consul"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	if p, err := exec.LookPath("consul"); err == nil {
		return p, nil
	}
	return "", errors.New("no consul binary: pass --consul-bin, set SLUICE_CONSUL_BIN, or run .ci/install-consul.sh")
}

// waitConsul waits until the agent at addr has elected a leader.
func waitConsul(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/v1/status/leader")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && len(body) > 2 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("no leader")
}
