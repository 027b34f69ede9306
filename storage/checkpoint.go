package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/storage/atomicfile"
)

// A checkpoint file holds one int64 as a single text line,
// "sluice-ckpt-1 <value> <crc32c of what precedes the space, hex>\n".
const checkpointMagic = "sluice-ckpt-1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteCheckpoint atomically replaces the file at path with value (temporary
// file, fsync, rename, fsync of the directory): after a crash the file holds
// either the old or the new value.
func WriteCheckpoint(path string, value int64) error {
	return writeCheckpoint(path, value, true)
}

// WriteCheckpointNoSync replaces the file at path with value the same way
// but without any fsync: after a crash of the machine it may hold the old
// value, the new one, or nothing ReadCheckpoint accepts. For values that
// are only a lower bound to start from, such as the high watermark, where
// thousands of partitions fsyncing their checkpoint every few seconds
// would cost more than a lost one.
func WriteCheckpointNoSync(path string, value int64) error {
	return writeCheckpoint(path, value, false)
}

func writeCheckpoint(path string, value int64, sync bool) error {
	body := checkpointMagic + " " + strconv.FormatInt(value, 10)
	data := fmt.Appendf(nil, "%s %08x\n", body, crc32.Checksum([]byte(body), castagnoli))
	if err := atomicfile.Write(path, data, 0o640, sync); err != nil {
		return fmt.Errorf("storage: write checkpoint %s: %w", path, err)
	}
	return nil
}

// ReadCheckpoint returns the value stored at path by WriteCheckpoint; ok is
// false when there is no such file. A file that does not parse or fails its
// checksum gives an error wrapping ErrCorrupt.
func ReadCheckpoint(path string) (value int64, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("storage: read checkpoint: %w", err)
	}
	bad := func(why string) (int64, bool, error) {
		return 0, false, fmt.Errorf("%w: checkpoint %s: %s", ErrCorrupt, path, why)
	}
	line, found := strings.CutSuffix(string(data), "\n")
	sp := strings.LastIndexByte(line, ' ')
	if !found || sp < 0 {
		return bad("not one line")
	}
	body := line[:sp]
	if line[sp+1:] != fmt.Sprintf("%08x", crc32.Checksum([]byte(body), castagnoli)) {
		return bad("checksum mismatch")
	}
	v, found := strings.CutPrefix(body, checkpointMagic+" ")
	if !found {
		return bad("unknown format")
	}
	value, err = strconv.ParseInt(v, 10, 64)
	if err != nil {
		return bad("bad value")
	}
	return value, true, nil
}

// syncDir fsyncs a directory so that renames, creations and removals in it
// are durable.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
