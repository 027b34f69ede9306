package actors

import (
	"testing"
)

// Kafka places groups by abs(String.hashCode) % partitions; these hash
// values and partitions were computed with Java's String.hashCode.
func TestGroupPartitionMatchesKafka(t *testing.T) {
	for _, c := range []struct {
		s    string
		hash int32
	}{
		{"", 0},
		{"a", 97},
		{"group", 98629247},
		{"my-consumer-group", 1513705513},
		{"polygenelubricants", -2147483648},
		{"é😀", 1996812},
	} {
		if h := javaStringHash(c.s); h != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.s, h, c.hash)
		}
	}
	if p := GroupPartition("polygenelubricants", 50); p != 0 {
		t.Errorf("MinInt32 hash maps to %d, want 0", p)
	}
	if p := GroupPartition("my-consumer-group", 50); p != 13 {
		t.Errorf("partition %d", p)
	}
}
