package client

import "testing"

// Kafka's own vectors (UtilsTest.testMurmur2): a key hashes here exactly as
// in a Java producer, so it lands on the same partition.
func TestMurmur2MatchesKafka(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := int32(murmur2([]byte(c.in))); got != c.want {
			t.Errorf("murmur2(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestKafkaPartitioner(t *testing.T) {
	p := KafkaPartitioner()
	r := &Record{Key: []byte("foobar")}
	// toPositive(-790332482) % 7, as Kafka's DefaultPartitioner computes it.
	h := int32(-790332482)
	want := int((uint32(h) & 0x7fffffff) % 7)
	for i := 0; i < 3; i++ {
		if got := p.Partition(r, 7); got != want {
			t.Fatalf("keyed record went to %d, want %d", got, want)
		}
	}
	// Records without a key stick to one partition for a batch's worth of
	// bytes, then move to the next.
	kp := p.(*kafkaPartitioner)
	kp.setBatchBytes(1000)
	rec := &Record{Value: make([]byte, 84)} // 100 bytes with the overhead
	first := p.Partition(rec, 3)
	for i := 1; i < 30; i++ {
		want := (first + i/10) % 3
		if got := p.Partition(rec, 3); got != want {
			t.Fatalf("keyless record %d went to %d, want %d (10 records per partition, in turn)", i, got, want)
		}
	}
}
