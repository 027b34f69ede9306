package client

import "sync/atomic"

// Partitioner picks the partition of a record among n.
type Partitioner interface {
	Partition(r *Record, n int) int
}

// KafkaPartitioner is Kafka's default: murmur2 of the key for keyed records,
// so keys land on the partitions a Kafka producer would choose, and
// round-robin for records without a key.
func KafkaPartitioner() Partitioner { return &kafkaPartitioner{} }

type kafkaPartitioner struct{ next atomic.Uint32 }

func (p *kafkaPartitioner) Partition(r *Record, n int) int {
	if r.Key == nil {
		return int(p.next.Add(1)-1) % n
	}
	return int(murmur2(r.Key)&0x7fffffff) % n
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
