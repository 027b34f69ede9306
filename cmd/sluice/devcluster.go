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
	"syscall"
	"time"
)

// runDevCluster starts a local Consul agent and n brokers on 127.0.0.1, each
// with its own data directory under --dir, and stops them all on Ctrl-C.
func runDevCluster(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev-cluster", stderr)
	brokers := fs.Int("brokers", 3, "number of brokers")
	dir := fs.String("dir", "./sluice-cluster", "directory for Consul's and the brokers' data and logs")
	consulBin := fs.String("consul-bin", "", "consul binary (default: $SLUICE_CONSUL, the .ci/install-consul.sh cache, or consul on PATH)")
	consulPort := fs.Int("consul-port", 8500, "Consul HTTP port")
	basePort := fs.Int("base-port", 9471, "broker i listens on base-port + i - 1")
	clusterName := fs.String("cluster", "dev", "cluster name")
	secure := fs.Bool("secure", false, "mutual TLS and ACLs: writes a throwaway CA and certificates to DIR/certs (kept across runs), User:admin is a super user")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *brokers < 1 || *brokers > 9 {
		return usageErr("--brokers %d: want 1 to 9", *brokers)
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
	var procs []*exec.Cmd
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			_ = procs[i].Process.Signal(syscall.SIGTERM)
			_ = procs[i].Wait()
		}
	}()
	start := func(name string, bin string, args ...string) error {
		logf, err := os.Create(filepath.Join(*dir, name+".log"))
		if err != nil {
			return err
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		return nil
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
	consulAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*consulPort))
	if err := start("consul", bin, "agent", "-server", "-bootstrap-expect", "1", "-data-dir", filepath.Join(*dir, "consul"),
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-http-port", strconv.Itoa(*consulPort),
		"-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1"); err != nil {
		return err
	}
	if err := waitConsul(consulAddr, 30*time.Second); err != nil {
		return fmt.Errorf("consul did not start (see %s): %w", filepath.Join(*dir, "consul.log"), err)
	}
	fmt.Fprintf(stdout, "consul   http://%s\n", consulAddr)
	var seeds []string
	for i := 1; i <= *brokers; i++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*basePort+i-1))
		name := fmt.Sprintf("broker-%d", i)
		args := []string{"broker", "--consul", consulAddr, "--cluster", *clusterName, "--id", strconv.Itoa(i),
			"--data", filepath.Join(*dir, name), "--addr", addr}
		if *secure {
			args = append(args, "--tls-cert", filepath.Join(certs, name+".crt"), "--tls-key", filepath.Join(certs, name+".key"),
				"--tls-ca", filepath.Join(certs, "ca.crt"), "--super-users", "User:admin")
		}
		if err := start(name, self, args...); err != nil {
			return err
		}
		seeds = append(seeds, addr)
		fmt.Fprintf(stdout, "broker %d %s (log %s)\n", i, addr, filepath.Join(*dir, name+".log"))
	}
	fmt.Fprintf(stdout, "\nexport SLUICE_BROKER=%s\n", seeds[0])
	if *secure {
		abs, _ := filepath.Abs(certs)
		fmt.Fprintf(stdout, "export SLUICE_TLS_CERT=%s SLUICE_TLS_KEY=%s SLUICE_TLS_CA=%s  # as User:admin (super user)\n",
			filepath.Join(abs, "user-admin.crt"), filepath.Join(abs, "user-admin.key"), filepath.Join(abs, "ca.crt"))
	}
	fmt.Fprintf(stdout, "Ctrl-C stops the cluster; data stays in %s.\n", *dir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	exited := make(chan error, 1)
	for _, p := range procs {
		go func(p *exec.Cmd) { exited <- fmt.Errorf("%s exited: %v", filepath.Base(p.Path), p.Wait()) }(p)
	}
	select {
	case <-sig:
		return nil
	case err := <-exited:
		return err
	}
}

// findConsul returns the consul binary to run.
func findConsul(flagValue string) (string, error) {
	candidates := []string{flagValue, os.Getenv("SLUICE_CONSUL")}
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
	return "", errors.New("no consul binary: pass --consul-bin, set SLUICE_CONSUL, or run .ci/install-consul.sh")
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
