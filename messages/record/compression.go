package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression, Kafka's numbering (the low three bits of
// the batch attributes). A compressed batch compresses its records section
// as a whole; the header stays plain.
type Codec int8

const (
	NoCompression Codec = 0
	Gzip          Codec = 1
	Snappy        Codec = 2
	LZ4           Codec = 3
	Zstd          Codec = 4
)

var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

func (c Codec) String() string {
	if c >= 0 && int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec reads a codec by its Kafka name (none, gzip, snappy, lz4, zstd).
func ParseCodec(name string) (Codec, error) {
	for i, n := range codecNames {
		if strings.EqualFold(name, n) {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// Codec returns the compression of the batch with header h.
func (h Header) Codec() Codec { return Codec(h.Attributes & attrCompressionMask) }

// MaxDecompressedBytes bounds what one batch's records may decompress to,
// so that a small hostile batch cannot make a broker allocate without
// limit.
const MaxDecompressedBytes = 64 << 20

// Compress returns a copy of the finished, uncompressed batch b with its
// records section compressed with c, its attributes and CRC set.
func Compress(b []byte, c Codec) ([]byte, error) {
	if c == NoCompression {
		return b, nil
	}
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("%w: batch shorter than its header", ErrCorrupt)
	}
	body, err := compress(c, b[HeaderSize:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, HeaderSize, HeaderSize+len(body))
	copy(out, b[:HeaderSize])
	out = append(out, body...)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-lengthPrefix))
	attrs := binary.BigEndian.Uint16(out[offAttributes:])
	binary.BigEndian.PutUint16(out[offAttributes:], attrs&^attrCompressionMask|uint16(c))
	binary.BigEndian.PutUint32(out[offCRC:], ComputeCRC(out))
	return out, nil
}

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

func zstdCodec() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		if zstdEnc, zstdErr = zstd.NewWriter(nil); zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxDecompressedBytes), zstd.WithDecoderConcurrency(0))
	})
	return zstdEnc, zstdDec, zstdErr
}

func compress(c Codec, src []byte) ([]byte, error) {
	switch c {
	case Gzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Snappy:
		// The raw block format, as librdkafka and franz-go write it.
		return snappy.Encode(nil, src), nil
	case LZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Zstd:
		enc, _, err := zstdCodec()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("%w: compression codec %d", ErrCorrupt, c)
}

// decompressSlots bounds the decompressions running at once: each may
// take MaxDecompressedBytes, so many batches decompressed in parallel (a
// burst of compression bombs to many partitions) take their turns instead
// of adding up.
var decompressSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// decompress returns the records section src decompressed with c, at most
// MaxDecompressedBytes of it.
func decompress(c Codec, src []byte) ([]byte, error) {
	decompressSlots <- struct{}{}
	defer func() { <-decompressSlots }()
	var out []byte
	var err error
	switch c {
	case Gzip:
		var r *gzip.Reader
		if r, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = readLimited(r)
		}
	case Snappy:
		out, err = decodeSnappy(src)
	case LZ4:
		out, err = readLimited(lz4.NewReader(bytes.NewReader(src)))
	case Zstd:
		var dec *zstd.Decoder
		if _, dec, err = zstdCodec(); err == nil {
			out, err = dec.DecodeAll(src, nil)
		}
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s records do not decompress: %v", ErrCorrupt, c, err)
	}
	return out, nil
}

func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, MaxDecompressedBytes+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxDecompressedBytes {
		return nil, fmt.Errorf("more than %d bytes", MaxDecompressedBytes)
	}
	return out, nil
}

// xerialMagic opens snappy data framed as the Java client (snappy-java's
// SnappyOutputStream) writes it: the magic, two 4-byte versions, then
// chunks of a 4-byte length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func decodeSnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return decodeSnappyBlock(nil, src)
	}
	if len(src) < 16 {
		return nil, fmt.Errorf("xerial snappy header cut short")
	}
	src = src[16:]
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, fmt.Errorf("xerial snappy chunk length cut short")
		}
		n := int(binary.BigEndian.Uint32(src))
		src = src[4:]
		if n > len(src) {
			return nil, fmt.Errorf("xerial snappy chunk of %d bytes, %d left", n, len(src))
		}
		var err error
		if out, err = decodeSnappyBlock(out, src[:n]); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return out, nil
}

// decodeSnappyBlock appends one raw snappy block to dst, refusing one that
// would take dst past MaxDecompressedBytes.
func decodeSnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if len(dst)+n > MaxDecompressedBytes {
		return nil, fmt.Errorf("more than %d bytes", MaxDecompressedBytes)
	}
	dec, err := snappy.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(dst, dec...), nil
}
