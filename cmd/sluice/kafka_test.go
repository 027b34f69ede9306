package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// needTool returns the path of an external tool a test drives, skipping
// the test when it is missing, unless SLUICE_REQUIRE_TOOLS is set (CI sets
// it after installing them): then a missing tool fails the test.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("SLUICE_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s is not installed", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

var kafkaReady = regexp.MustCompile(`sluice broker ready.* kafka=(\S+)`)

// kafkaAddr is the Kafka listener's address from b's ready line.
func kafkaAddr(t *testing.T, b *brokerProc) string {
	t.Helper()
	m := kafkaReady.FindStringSubmatch(b.logs.String())
	if m == nil || m[1] == "" {
		t.Fatalf("no Kafka listener in the ready line:\n%s", tail(b.logs.String(), 5))
	}
	return m[1]
}

// kcatMetadata is what `kcat -L -J` prints.
type kcatMetadata struct {
	ControllerID int32 `json:"controllerid"`
	Brokers      []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
			Replicas  []struct {
				ID int32 `json:"id"`
			} `json:"replicas"`
			ISRs []struct {
				ID int32 `json:"id"`
			} `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

func kcatList(t *testing.T, kcat, addr string, args ...string) kcatMetadata {
	t.Helper()
	cmd := exec.Command(kcat, append([]string{"-L", "-J", "-b", addr, "-m", "10"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	var md kcatMetadata
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	return md
}

// kcat lists a broker's topics through the Kafka listener; garbage on the
// listener closes only that connection.
func TestKafkaListenerMetadata(t *testing.T) {
	kcat := needTool(t, "kcat")
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "events", "--partitions", "3")

	md := kcatList(t, kcat, addr)
	if len(md.Brokers) != 1 || md.Brokers[0].ID != 0 || md.Brokers[0].Name != addr || md.ControllerID != 0 {
		t.Fatalf("brokers %+v, controller %d", md.Brokers, md.ControllerID)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != "events" || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("topics %+v", md.Topics)
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Leader != 0 || len(p.Replicas) != 1 || len(p.ISRs) != 1 {
			t.Errorf("partition %+v", p)
		}
	}
	if md := kcatList(t, kcat, addr, "-t", "nosuch"); len(md.Topics) != 1 || !strings.Contains(md.Topics[0].Error, "Unknown topic") {
		t.Errorf("an unknown topic: %+v", md.Topics)
	}

	// Garbage, a huge size prefix and an unknown API key each close their
	// own connection; the broker serves on, on both doors.
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0x7f, 0xff, 0xff, 0xff, 1, 2, 3},
		{0, 0, 0, 12, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0, 0},
	} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write(junk)
		if n, err := nc.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("%q: read %d bytes (%v), want the connection closed", junk, n, err)
		}
		nc.Close()
	}
	if md := kcatList(t, kcat, addr); len(md.Topics) != 1 {
		t.Fatalf("after the garbage: %+v", md)
	}
	b.cli("", "topic", "list")
	if !strings.Contains(b.logs.String(), "kafka connection closed") {
		t.Error("the closed connections were not logged")
	}
	// A secure broker does not open a plaintext Kafka door.
	_, errOut, code := runCLI(t, "", "broker", "--data", t.TempDir(), "--kafka-addr", "127.0.0.1:0",
		"--tls-cert", "b.crt", "--tls-key", "b.key", "--tls-ca", "ca.crt")
	if code != 2 || !strings.Contains(errOut, "does not serve TLS yet") {
		t.Errorf("--kafka-addr with TLS: exit %d, %s", code, errOut)
	}
}

// In a cluster every broker answers Metadata with every broker at its
// Kafka address, a live controller and leaders a client can reach.
func TestKafkaListenerClusterMetadata(t *testing.T) {
	kcat := needTool(t, "kcat")
	c := startCluster(t, 3, "--kafka-addr", "127.0.0.1:0")
	c.createTopic("orders", 6, 3, nil)
	addrs := map[int32]string{}
	for id, b := range c.brokers {
		addrs[id] = kafkaAddr(t, b)
	}
	for id, addr := range addrs {
		md := kcatList(t, kcat, addr, "-t", "orders")
		if len(md.Brokers) != 3 {
			t.Fatalf("broker %d lists %+v", id, md.Brokers)
		}
		for _, br := range md.Brokers {
			if addrs[br.ID] != br.Name {
				t.Errorf("broker %d at %s, want %s", br.ID, br.Name, addrs[br.ID])
			}
		}
		if addrs[md.ControllerID] == "" {
			t.Errorf("controller %d is not a listed broker", md.ControllerID)
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 6 {
			t.Fatalf("topics %+v", md.Topics)
		}
		for _, p := range md.Topics[0].Partitions {
			if addrs[p.Leader] == "" || len(p.Replicas) != 3 {
				t.Errorf("partition %+v", p)
			}
		}
	}
}
