package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recordsOf decodes every record of batch b.
func recordsOf(t *testing.T, b []byte) []Record {
	t.Helper()
	var out []Record
	it := Records(b)
	for {
		r, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, r)
	}
}

// Each codec compresses a batch that validates and decodes to the same
// records, with the header (offsets, timestamps, producer) unchanged.
func TestCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := randomRecords(rng, 200)
	plain := build(Producer{ID: 7, Epoch: 1, BaseSequence: 40}, recs)
	want := recordsOf(t, plain)
	for _, c := range []Codec{Gzip, Snappy, LZ4, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			b, err := Compress(plain, c)
			if err != nil {
				t.Fatal(err)
			}
			h, err := Validate(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			ph, _ := ParseHeader(plain)
			if h.Codec() != c || h.RecordCount != ph.RecordCount || h.ProducerID != 7 || h.BaseSequence != 40 || h.MaxTimestamp != ph.MaxTimestamp {
				t.Fatalf("header %+v", h)
			}
			got := recordsOf(t, b)
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) || got[i].TimestampDelta != want[i].TimestampDelta {
					t.Fatalf("record %d differs", i)
				}
			}
		})
	}
	if _, err := ParseCodec("brotli"); err == nil {
		t.Error("an unknown codec name was taken")
	}
}

// Batches compressed by franz-go (each codec, as Kafka clients write them)
// validate and decode here.
func TestDecompressFranzGoBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	recs := randomRecords(rng, 50)
	plain := build(NoProducer, recs)
	want := recordsOf(t, plain)
	for _, c := range []struct {
		codec Codec
		kgo   kgo.CompressionCodec
	}{{Gzip, kgo.GzipCompression()}, {Snappy, kgo.SnappyCompression()}, {LZ4, kgo.Lz4Compression()}, {Zstd, kgo.ZstdCompression()}} {
		t.Run(c.codec.String(), func(t *testing.T) {
			comp, err := kgo.DefaultCompressor(c.kgo)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			body, codec := comp.Compress(&buf, plain[HeaderSize:])
			if Codec(codec) != c.codec {
				t.Fatalf("franz-go used codec %d", codec)
			}
			b := append(append([]byte(nil), plain[:HeaderSize]...), body...)
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-lengthPrefix))
			b[offAttributes+1] |= byte(codec)
			binary.BigEndian.PutUint32(b[offCRC:], ComputeCRC(b))
			if _, err := Validate(b, 0); err != nil {
				t.Fatal(err)
			}
			if got := recordsOf(t, b); len(got) != len(want) || !bytes.Equal(got[3].Value, want[3].Value) {
				t.Fatalf("decoded %d records", len(got))
			}
		})
	}
}

// The Java client frames snappy as snappy-java does (xerial); it reads too.
func TestDecodeXerialSnappy(t *testing.T) {
	data := bytes.Repeat([]byte("sluice "), 5000)
	framed := append([]byte(nil), xerialMagic...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	for _, chunk := range [][]byte{data[:20000], data[20000:]} {
		block := snappy.Encode(nil, chunk)
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
	}
	got, err := decodeSnappy(framed)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("xerial: %v, %d bytes", err, len(got))
	}
	if _, err := decodeSnappy(framed[:len(framed)-3]); err == nil {
		t.Fatal("a cut xerial chunk decoded")
	}
}

// A small batch that decompresses to more than MaxDecompressedBytes is
// refused, whatever the codec.
func TestDecompressionBomb(t *testing.T) {
	zeros := make([]byte, MaxDecompressedBytes+1)
	for _, c := range []Codec{Gzip, Snappy, LZ4, Zstd} {
		body, err := compress(c, zeros)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decompress(c, body); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %d compressed bytes decompressed past the limit: %v", c, len(body), err)
		}
	}
}

// Decompressions take turns: with every slot taken, a batch waits to be
// decompressed until one is given back.
func TestDecompressionsTakeTurns(t *testing.T) {
	plain := build(Producer{ID: -1, Epoch: -1, BaseSequence: -1}, randomRecords(rand.New(rand.NewPCG(5, 6)), 20))
	b, err := Compress(plain, Zstd)
	if err != nil {
		t.Fatal(err)
	}
	for range cap(decompressSlots) {
		decompressSlots <- struct{}{}
	}
	done := make(chan int, 1)
	go func() {
		n := 0
		it := Records(b)
		for _, ok, _ := it.Next(); ok; _, ok, _ = it.Next() {
			n++
		}
		done <- n
	}()
	select {
	case <-done:
		t.Fatal("a batch was decompressed while every slot was taken")
	case <-time.After(50 * time.Millisecond):
	}
	<-decompressSlots
	if n := <-done; n != 20 {
		t.Fatalf("%d records, want 20", n)
	}
	for range cap(decompressSlots) - 1 {
		<-decompressSlots
	}
}
