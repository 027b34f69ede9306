// Package atomicfile replaces a file's content so that readers see the old
// content or the new, never a mix: the data goes to a temporary file beside
// it (path + ".tmp"), which is then renamed over it. With durable set the
// file is fsynced before the rename and its directory after it, so that a
// crash of the machine leaves the old content or the new too.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluicemq/sluice/storage/syncjournal"
)

// Write replaces path with data, with exactly the permissions perm.
//
// A temporary file left by an earlier crash is removed first and the new
// one is created exclusively, so a symbolic link planted at its name is
// never followed.
func Write(path string, data []byte, perm os.FileMode, durable bool) (err error) {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	// The umask may have narrowed perm.
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	syncjournal.SyncedFile(path)
	return nil
}

// SyncDir fsyncs a directory, making the entries created or renamed in it
// durable.
func SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
