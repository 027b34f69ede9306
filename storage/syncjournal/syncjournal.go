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
	"syscall"
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

// Synced records that the file info describes (at path) is durable up to
// size bytes: call it once an fsync of that file (or of a file renamed to
// path after its fsync) has returned, with the size the file had before
// that fsync began. The file is told apart by its inode, so a late record
// of a file that has since been replaced at path does not count for the
// new one.
func Synced(path string, info os.FileInfo, size int64) {
	j := active.Load()
	if j == nil || info == nil {
		return
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintf(j.f, "%d\t%d\t%s\n", size, inode(info), abs)
}

// SyncedBeforeCreate records, ahead of time, that the file at path will be
// durable up to size bytes once a file exists at next, for a call that
// fsyncs path and then creates next (wal finishing a segment and starting
// the next): a record made after such a call, as Synced is, would leave the
// journal behind the disk if a kill came in between. PowerLoss applies it
// only if next exists. It names no inode: it holds for whatever file is at
// path then, which the caller never writes again once next exists.
func SyncedBeforeCreate(path string, size int64, next string) {
	j := active.Load()
	if j == nil {
		return
	}
	abs, err1 := filepath.Abs(path)
	nextAbs, err2 := filepath.Abs(next)
	if err1 != nil || err2 != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintf(j.f, "%d\t%s%q\t%s\n", size, oncePrefix, nextAbs, abs)
}

// SyncedBeforeRename records, ahead of time, that the file about to be
// written at tmp will be durable up to size bytes at path, for a call that
// writes tmp, fsyncs it and only then renames it to path (through other
// names or not: wal rewriting a segment as NAME.END.TEMP, NAME.END, NAME):
// a record made after such a call, as Synced is, would leave the journal
// behind the disk if a kill came in between, and PowerLoss would empty the
// file in place. It creates tmp with perm (or empties it) and records it by
// its inode, so the record counts only once that very file is at path,
// which it reaches only after its fsync; the caller's writer must open
// tmp as it is (O_TRUNC), not remove it and create another.
func SyncedBeforeRename(tmp, path string, size int64, perm os.FileMode) error {
	if active.Load() == nil {
		return nil
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	Synced(path, info, size)
	return nil
}

// oncePrefix marks the second field of a SyncedBeforeCreate record, where
// a Synced record has the inode.
const oncePrefix = "once "

// SyncedFile records the file at path as durable at its current size.
func SyncedFile(path string) {
	if active.Load() == nil {
		return
	}
	if st, err := os.Stat(path); err == nil {
		Synced(path, st, st.Size())
	}
}

func inode(info os.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// Enabled reports whether recording is on.
func Enabled() bool { return active.Load() != nil }

// Loss is what PowerLoss took away.
type Loss struct {
	Files int   // files cut short or emptied
	Bytes int64 // bytes dropped
}

// PowerLoss truncates every regular file under root to the largest size
// the journal at journalPath recorded for it (the same path and inode, or
// a SyncedBeforeCreate record whose next file exists), or to nothing when
// it never recorded it. Records may come out of order (an fsync running
// beside the writer ends after a later one). Files wal renames into place
// only after their own fsync (NAME.START, NAME.END) are left alone.
func PowerLoss(root, journalPath string) (Loss, error) {
	type file struct {
		path string
		ino  uint64
	}
	type once struct {
		size int64
		next string
	}
	durable := map[file]int64{}
	onces := map[string][]once{} // SyncedBeforeCreate records by path
	f, err := os.Open(journalPath)
	if err != nil && !os.IsNotExist(err) {
		return Loss{}, err
	}
	if err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.SplitN(sc.Text(), "\t", 3)
			if len(fields) != 3 {
				continue // a line torn by the kill
			}
			n, err1 := strconv.ParseInt(fields[0], 10, 64)
			if q, ok := strings.CutPrefix(fields[1], oncePrefix); ok {
				if next, err := strconv.Unquote(q); err == nil && err1 == nil {
					onces[fields[2]] = append(onces[fields[2]], once{n, next})
				}
				continue
			}
			ino, err2 := strconv.ParseUint(fields[1], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			k := file{fields[2], ino}
			durable[k] = max(durable[k], n)
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
		keep := durable[file{path, inode(info)}]
		for _, o := range onces[path] {
			if _, err := os.Lstat(o.next); err == nil {
				keep = max(keep, o.size)
			}
		}
		if info.Size() <= keep {
			return nil
		}
		loss.Files++
		loss.Bytes += info.Size() - keep
		return os.Truncate(path, keep)
	})
	return loss, err
}

// Disable stops recording (for tests that enable it).
func Disable() {
	if j := active.Swap(nil); j != nil {
		j.f.Close()
	}
}
