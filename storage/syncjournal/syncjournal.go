// Package syncjournal lets crash tests take away what a machine's power
// failure takes away: every byte written since the last fsync of its file.
//
// While enabled (Enable, or SLUICE_SYNC_JOURNAL naming a file when the
// broker starts), the storage layer records after each fsync how far the
// file it synced is durable (Synced). After the process is killed, PowerLoss
// truncates every file under a directory to its recorded durable size, the
// way lazyfs or dm-flakey drop a crashed machine's page cache. A missing or
// misdirected fsync then shows as lost data, where a plain kill -9 (which
// keeps the page cache) would hide it.
//
// Disabled, Synced costs one atomic load.
//
// This package imports only the standard library.
package syncjournal

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Env names the journal file a broker records into when it is set.
const Env = "SLUICE_SYNC_JOURNAL"

type journal struct {
	mu sync.Mutex
	f  *os.File
}

var active atomic.Pointer[journal]

// Enable starts recording into the file at path (appending).
func Enable(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	active.Store(&journal{f: f})
	return nil
}

// FromEnv enables recording when Env is set; it reports whether it did.
func FromEnv() (bool, error) {
	path := os.Getenv(Env)
	if path == "" {
		return false, nil
	}
	return true, Enable(path)
}

// Synced records that path is durable up to size bytes: call it once an
// fsync of the file (or of a file renamed to path after its fsync) has
// returned, with the size the file had before that fsync began.
func Synced(path string, size int64) {
	j := active.Load()
	if j == nil {
		return
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintf(j.f, "%d\t%s\n", size, abs)
}

// SyncedFile records path at its current size.
func SyncedFile(path string) {
	if active.Load() == nil {
		return
	}
	if st, err := os.Stat(path); err == nil {
		Synced(path, st.Size())
	}
}

// Enabled reports whether recording is on.
func Enabled() bool { return active.Load() != nil }

// Loss is what PowerLoss took away.
type Loss struct {
	Files int   // files cut short or emptied
	Bytes int64 // bytes dropped
}

// PowerLoss truncates every regular file under root to the size the
// journal at journalPath last recorded for it, or to nothing when it never
// recorded it. Files wal renames into place only after their own fsync
// (NAME.START, NAME.END) are left alone.
func PowerLoss(root, journalPath string) (Loss, error) {
	durable := map[string]int64{}
	f, err := os.Open(journalPath)
	if err != nil && !os.IsNotExist(err) {
		return Loss{}, err
	}
	if err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			size, path, ok := strings.Cut(sc.Text(), "\t")
			n, perr := strconv.ParseInt(size, 10, 64)
			if !ok || perr != nil {
				continue // a line torn by the kill
			}
			durable[path] = n
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return Loss{}, err
		}
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return Loss{}, err
	}
	var loss Loss
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".START") || strings.HasSuffix(path, ".END") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		keep := durable[path]
		if info.Size() <= keep {
			return nil
		}
		loss.Files++
		loss.Bytes += info.Size() - keep
		return os.Truncate(path, keep)
	})
	return loss, err
}
