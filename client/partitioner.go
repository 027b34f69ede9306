package client

import (
	"math/rand/v2"
	"sync"
)

// Partitioner picks the partition of a record among n.
type Partitioner interface {
	Partition(r *Record, n int) int
}

// KafkaPartitioner is Kafka's default partitioner (since Kafka 3.3,
// KIP-794): murmur2 of the key for keyed records, so keys land on the
// partitions a Kafka producer would choose; records without a key stick to
// one partition until a batch's worth of bytes (the producer's BatchBytes)
// went to it, then move on to the next one. Sticking fills whole batches:
// spreading keyless records one by one over many partitions sends many
// small batches, each its own request and fsync.
func KafkaPartitioner() Partitioner { return &kafkaPartitioner{} }

type kafkaPartitioner struct {
	mu         sync.Mutex
	batchBytes int // bytes a partition gets before the next one; set by the producer
	n          int // partition count the current stick is for
	cur        int
	bytes      int
}

// setBatchBytes is called by the producer with its batch size.
func (p *kafkaPartitioner) setBatchBytes(n int) {
	p.mu.Lock()
	p.batchBytes = n
	p.mu.Unlock()
}

func (p *kafkaPartitioner) Partition(r *Record, n int) int {
	if r.Key != nil {
		return int(murmur2(r.Key)&0x7fffffff) % n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.n != n:
		p.n, p.cur, p.bytes = n, rand.IntN(n), 0
	case p.bytes >= max(p.batchBytes, 1):
		p.cur, p.bytes = (p.cur+1)%n, 0
	}
	p.bytes += recordBytes(r)
	return p.cur
}

// recordBytes is about what r adds to a batch.
func recordBytes(r *Record) int {
	n := len(r.Key) + len(r.Value) + 16
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 4
	}
	return n
}

// murmur2 is the 32-bit MurmurHash2 with Kafka's seed, as in
// org.apache.kafka.common.utils.Utils.murmur2.
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	length := len(data)
	h := uint32(seed) ^ uint32(length)
	for len(data) >= 4 {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
