package kafka

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// logBroker answers fetches from partitions of fixed batches, as a leader
// does: whole batches within MaxBytes, the first one even above it, none
// for an offsets-only fetch. It records the fetches it was asked.
type logBroker struct {
	mu      sync.Mutex
	batches map[int32][][]byte // by partition of topic "t"
	asked   []*messages.FetchRequest
}

func (b *logBroker) Ask(c Caller, req proto.Message, timeout time.Duration) Answer {
	f := req.(*messages.FetchRequest)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, f)
	all := b.batches[f.Partition]
	resp := &messages.FetchResponse{Topic: f.Topic, Partition: f.Partition, HighWatermark: int64(len(all))}
	if f.OffsetsOnly {
		return received{res: resp}
	}
	size := 0
	for _, batch := range all[min(int(f.Offset), len(all)):] {
		if len(resp.Batches) > 0 && size+len(batch) > int(f.MaxBytes) {
			break
		}
		resp.Batches = append(resp.Batches, batch)
		size += len(batch)
	}
	return received{res: resp}
}

func (b *logBroker) fetches() []*messages.FetchRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*messages.FetchRequest(nil), b.asked...)
}

// batchesOf returns n batches of size bytes each, each filled with its
// partition and index so they can be told apart.
func batchesOf(partition, n, size int) [][]byte {
	var out [][]byte
	for i := range n {
		out = append(out, bytes.Repeat([]byte{byte(partition), byte(i)}, size/2))
	}
	return out
}

func fetchRequest(maxBytes int32, parts ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxBytes, req.MinBytes, req.ReplicaID = maxBytes, 1, -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = "t"
	for _, p := range parts {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 8<<20, -1
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

func doFetch(t *testing.T, addr string, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	c := dial(t, addr)
	c.send(frameRequest(req, 1))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(req.GetVersion())
	if _, err := c.readLarge(resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// readLarge is read for responses above 1 MiB.
func (c *client) readLarge(resp kmsg.Response) (int32, error) {
	frame, err := readFrame(c.r, 256<<20)
	if err != nil {
		return 0, err
	}
	return int32(frame[0])<<24 | int32(frame[1])<<16 | int32(frame[2])<<8 | int32(frame[3]), resp.ReadFrom(frame[4:])
}

func recordBytes(resp *kmsg.FetchResponse) (total int, withRecords int) {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			total += len(p.RecordBatches)
			if len(p.RecordBatches) > 0 {
				withRecords++
			}
		}
	}
	return total, withRecords
}

// A partition named many times is asked and answered once: one Fetch
// cannot turn into many reads of the same data.
func TestFetchRepeatedPartitionAnsweredOnce(t *testing.T) {
	lb := &logBroker{batches: map[int32][][]byte{0: batchesOf(0, 8, 1<<20)}}
	_, addr := startServer(t, lb, Config{})
	parts := make([]int32, 300)
	req := fetchRequest(100<<20, parts...)
	req.Topics = append(req.Topics, req.Topics[0]) // the topic twice, too
	resp := doFetch(t, addr, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("%d topics, %d partitions in the answer, want 1 and 1", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	if n := len(lb.fetches()); n != 1 {
		t.Fatalf("the partition was asked %d times", n)
	}
	if total, _ := recordBytes(resp); total != 8<<20 {
		t.Fatalf("%d record bytes, want the broker's 8 MiB", total)
	}
}

// A fetch of many full partitions holds at most the broker's limit, even
// when the client asks for more: partitions are read in order until it is
// spent, and the rest answer their offsets only.
func TestFetchWithinTheBrokerLimit(t *testing.T) {
	lb := &logBroker{batches: map[int32][][]byte{}}
	var parts []int32
	for p := range int32(20) {
		lb.batches[p] = batchesOf(int(p), 8, 1<<20)
		parts = append(parts, p)
	}
	_, addr := startServer(t, lb, Config{MaxFetchBytes: 8 << 20})
	resp := doFetch(t, addr, fetchRequest(1<<30, parts...))
	total, with := recordBytes(resp)
	if total != 8<<20 || with != 1 {
		t.Fatalf("%d record bytes from %d partitions, want 8 MiB from the first", total, with)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.HighWatermark != 8 {
			t.Errorf("partition %d answered HW %d, want 8", p.Partition, p.HighWatermark)
		}
	}
	offsetsOnly := 0
	for _, f := range lb.fetches() {
		if f.OffsetsOnly {
			offsetsOnly++
		} else if f.MaxBytes > 8<<20 {
			t.Errorf("partition %d asked for %d bytes", f.Partition, f.MaxBytes)
		}
	}
	if offsetsOnly != 19 {
		t.Errorf("%d partitions asked for offsets only, want 19", offsetsOnly)
	}
}

// The first partition with records is answered whole even above the
// limits (KIP-74); a later partition only within what is left.
func TestFetchFirstBatchWhole(t *testing.T) {
	lb := &logBroker{batches: map[int32][][]byte{
		0: nil,                      // empty
		1: batchesOf(1, 1, 3<<20),   // one batch above the limit
		2: batchesOf(2, 1, 3<<20),   // another: over what is left
		3: batchesOf(3, 4, 256<<10), // small batches
	}}
	_, addr := startServer(t, lb, Config{})
	resp := doFetch(t, addr, fetchRequest(2<<20, 0, 1, 2, 3))
	got := map[int32]int{}
	for _, p := range resp.Topics[0].Partitions {
		got[p.Partition] = len(p.RecordBatches)
	}
	if got[0] != 0 || got[1] != 3<<20 || got[2] != 0 || got[3] != 0 {
		t.Fatalf("record bytes by partition %v, want only partition 1's whole batch", got)
	}
}

// A request naming more entries than allowed closes the connection
// before anything is asked of the broker.
func TestTooManyEntriesClosesTheConnection(t *testing.T) {
	lb := &logBroker{batches: map[int32][][]byte{}}
	srv, addr := startServer(t, lb, Config{MaxRequestEntries: 100})
	parts := make([]int32, 101)
	for i := range parts {
		parts[i] = int32(i)
	}
	c := dial(t, addr)
	c.send(frameRequest(fetchRequest(1<<20, parts...), 1))
	if _, err := c.read(kmsg.NewPtrFetchResponse()); !errors.Is(err, io.EOF) {
		t.Fatalf("read after a request with too many entries: %v, want EOF", err)
	}
	if n := len(lb.fetches()); n != 0 {
		t.Fatalf("%d fetches reached the broker", n)
	}
	if srv.Refused.Load() != 1 {
		t.Fatalf("refusals counted: %d", srv.Refused.Load())
	}
}
