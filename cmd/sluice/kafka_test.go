package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
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
	// librdkafka enables every feature whose APIs the listener serves:
	// record batches, idempotence, offsets by time, throttling, every codec,
	// balanced consumer groups.
	// SASL is not served through this door yet.
	debug, err := exec.Command(kcat, "-L", "-b", addr, "-d", "feature,protocol").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -d feature: %v\n%s", err, debug)
	}
	notServed := map[string]bool{"Sasl": true, "SaslHandshake": true, "SaslAuthReq": true}
	for _, m := range regexp.MustCompile(`Disabling feature (\S+)`).FindAllStringSubmatch(string(debug), -1) {
		if !notServed[m[1]] {
			t.Errorf("librdkafka disabled feature %s", m[1])
		}
	}
	if !strings.Contains(string(debug), "Enabling feature IdempotentProducer") || !strings.Contains(string(debug), "Enabling feature ZSTD") {
		t.Errorf("librdkafka did not enable idempotence and zstd:\n%s", tail(string(debug), 40))
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
	// Written through one broker, read through another: each client finds
	// every partition's leader.
	var in strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	kcatRun(t, kcat, in.String(), "-P", "-b", addrs[1], "-t", "orders", "-K:", "-X", "acks=all", "-z", "zstd")
	out := kcatRun(t, kcat, "", "-C", "-b", addrs[3], "-t", "orders", "-o", "beginning", "-e", "-q", "-f", `%k=%s\n`)
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != 300 {
		t.Fatalf("read %d records through broker 3", len(got))
	}
	for _, line := range got {
		if k, v, _ := strings.Cut(line, "="); v != "v"+k[1:] {
			t.Fatalf("record %q", line)
		}
	}
}

// kcatRun runs kcat with args and stdin and returns its standard output.
func kcatRun(t *testing.T, kcat, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kcat, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kcat %v: %v\n%s%s", args, err, out.String(), errOut.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("kcat %v did not finish in 60 s\n%s%s", args, out.String(), errOut.String())
	}
	return out.String()
}

// Records written through the Kafka door are read back by kcat and by
// sluice consume, byte for byte (key, value, headers, timestamp, partition,
// offset), and records written by sluice produce are read by kcat.
func TestKafkaProduceAndFetch(t *testing.T) {
	kcat := needTool(t, "kcat")
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "events", "--partitions", "3")

	var in strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&in, "user-%d:visit %d\n", i, i)
	}
	kcatRun(t, kcat, in.String(), "-P", "-b", addr, "-t", "events", "-K:", "-X", "acks=all")

	// kcat's view and Sluice's view of the same records.
	viaKafka := strings.Split(strings.TrimSpace(kcatRun(t, kcat, "", "-C", "-b", addr, "-t", "events", "-o", "beginning", "-e", "-q",
		"-f", `%k|%s|%T|%p|%o\n`)), "\n")
	var viaSluice []string
	for _, line := range strings.Split(strings.TrimSpace(b.cli("", "consume", "events", "--offset", "start", "--to-end", "--format", "json")), "\n") {
		var r jsonRecordTest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		viaSluice = append(viaSluice, fmt.Sprintf("%s|%s|%d|%d|%d", r.Key, r.Value, r.Timestamp, r.Partition, r.Offset))
	}
	// Both read the records in the same order (kcat) or partition order
	// (Sluice): compare as sets of lines.
	slices.Sort(viaKafka)
	slices.Sort(viaSluice)
	if len(viaKafka) != 100 || !slices.Equal(viaKafka, viaSluice) {
		t.Fatalf("kcat read %d records, sluice %d; first differences:\n%v\n%v", len(viaKafka), len(viaSluice), head(viaKafka), head(viaSluice))
	}
	// Keys were spread by the same hash as Sluice's producer uses.
	for _, line := range viaKafka {
		f := strings.Split(line, "|")
		if !strings.HasPrefix(f[1], "visit ") || f[0] != "user-"+strings.TrimPrefix(f[1], "visit ") {
			t.Fatalf("record %q", line)
		}
	}

	// The other way round, with a header.
	b.cli("from-sluice\n", "produce", "events", "--partition", "1", "--key", "k", "--header", "origin=sluice")
	got := kcatRun(t, kcat, "", "-C", "-b", addr, "-t", "events", "-p", "1", "-o", "-1", "-e", "-q", "-f", `%k=%s %h\n`)
	if strings.TrimSpace(got) != "k=from-sluice origin=sluice" {
		t.Fatalf("kcat read %q", got)
	}

	// Offsets for time and the end agree with Sluice's describe.
	d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "events", "--format", "json"))[0]
	for _, p := range d.Partitions {
		out := kcatRun(t, kcat, "", "-Q", "-b", addr, "-t", fmt.Sprintf("events:%d:-1", p.Partition))
		if !strings.Contains(out, fmt.Sprintf("offset %d", p.HighWatermark)) {
			t.Errorf("partition %d: kcat -Q says %q, describe says HW %d", p.Partition, out, p.HighWatermark)
		}
	}

	// A waiting consumer gets a record produced after it started.
	cmd := exec.Command(kcat, "-C", "-b", addr, "-t", "events", "-p", "2", "-o", "end", "-c", "1", "-q", "-f", `%s\n`)
	var waited strings.Builder
	cmd.Stdout = &waited
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, 30*time.Second, func() string {
		b.cli("late\n", "produce", "events", "--partition", "2")
		select {
		case err := <-exited:
			if err != nil || strings.TrimSpace(waited.String()) != "late" {
				t.Fatalf("the waiting consumer: %v, %q", err, waited.String())
			}
			return ""
		case <-time.After(time.Second):
			return "the waiting consumer has not got the record"
		}
	})

	// acks=0 writes too, with no answer to wait for.
	kcatRun(t, kcat, "fire-and-forget\n", "-P", "-b", addr, "-t", "events", "-p", "0", "-X", "acks=0")
	eventually(t, 20*time.Second, func() string {
		if out := b.cli("", "consume", "events", "--partition", "0", "--offset", "-1", "--to-end"); strings.TrimSpace(out) != "fire-and-forget" {
			return "acks=0 record not there: " + out
		}
		return ""
	})

	// An unknown topic is not created (librdkafka waits for it until the
	// message times out), and the internal topic refuses writes.
	b.cli("", "consume", "events", "--group", "g", "--from-beginning", "--max", "1") // creates __consumer_offsets
	for topic, want := range map[string]string{"nosuch": "Message timed out", "__consumer_offsets": "Broker: Invalid topic"} {
		cmd := exec.Command(kcat, "-P", "-b", addr, "-t", topic, "-p", "0", "-X", "topic.message.timeout.ms=3000")
		cmd.Stdin = strings.NewReader("x\n")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("producing to %s: %v %s", topic, err, out)
		}
	}
	if out := b.cli("", "topic", "list"); strings.Contains(out, "nosuch") {
		t.Error("producing to an unknown topic created it")
	}
}

// jsonRecordTest is sluice consume's JSON line.
type jsonRecordTest struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	Key       string `json:"key"`
	Value     string `json:"value"`
}

func head(xs []string) []string { return xs[:min(3, len(xs))] }
