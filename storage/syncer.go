package storage

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sluicemq/sluice/storage/syncjournal"
)

// A Sync makes durable what a log had written when TakeSync returned it:
// the segment file being written, through a descriptor of its own, and the
// log directory when a segment was created since the last Sync. Run it
// alone, or hand it to a Syncer to run with the other logs' syncs.
type Sync struct {
	file    *os.File // nil: nothing to do
	path    string
	size    int64       // the file's size when taken (for the sync journal)
	info    os.FileInfo // non-nil only while the sync journal records
	dir     string      // "" unless the directory needs an fsync too
	takeErr error
}

// Run fsyncs the file (and the directory) and releases the descriptor.
func (s *Sync) Run() error {
	if s.takeErr != nil {
		return s.takeErr
	}
	if s.file == nil {
		return nil
	}
	defer s.release()
	if err := s.file.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	if s.dir != "" {
		if err := syncDir(s.dir); err != nil {
			return fmt.Errorf("sync %s: %w", s.dir, err)
		}
	}
	s.journal()
	return nil
}

func (s *Sync) release() {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
}

// journal records the file as durable at its size when taken.
func (s *Sync) journal() {
	if s.info != nil {
		syncjournal.Synced(s.path, s.info, s.size)
	}
}

// Syncer runs the syncs of every log in one data directory in waves: while
// one wave runs, the syncs submitted meanwhile queue, and the next wave
// takes all of them. A wave of a few files fsyncs each of them at once; a
// larger one issues a single syncfs(2) of the data directory's filesystem,
// which on ext4 cost 59 ms for 1,000 files of 16 KiB where 1,000 parallel
// fsyncs cost 180 ms (and 100 files: 10 ms against 13 ms). When syncfs
// reports an error, every file of the wave is fsync'd alone, so that the
// error reaches only the logs it belongs to.
type Syncer struct {
	dir string
	// FilesystemSyncAt is the smallest wave that uses syncfs; below it the
	// files are fsync'd in parallel. Zero or less: never syncfs.
	FilesystemSyncAt int

	dirFile *os.File // used only by the goroutine running waves

	mu      sync.Mutex
	queue   []syncWaiter
	running bool

	stats SyncerStats
}

// SyncerStats are a Syncer's counters.
type SyncerStats struct {
	Waves, Syncs, FilesystemSyncs int64
	LargestWave                   int
}

type syncWaiter struct {
	s    *Sync
	done func(error)
}

// DefaultFilesystemSyncAt is where syncfs started to beat parallel fsyncs
// on the machine this was measured on (between 1 file, where one fsync
// takes 0.25 ms and a syncfs 1.9 ms, and 10 files).
const DefaultFilesystemSyncAt = 8

// NewSyncer returns a Syncer for the logs under dir. It opens dir now, so
// that its first syncfs reports write errors from this point on.
func NewSyncer(dir string) (*Syncer, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &Syncer{dir: dir, dirFile: d, FilesystemSyncAt: DefaultFilesystemSyncAt}, nil
}

// Submit queues s; done is called with its outcome, on the Syncer's
// goroutine, once the wave holding s has ended.
func (y *Syncer) Submit(s *Sync, done func(error)) {
	y.mu.Lock()
	y.queue = append(y.queue, syncWaiter{s, done})
	start := !y.running
	y.running = true
	y.mu.Unlock()
	if start {
		go y.run()
	}
}

// Stats returns the counters so far.
func (y *Syncer) Stats() SyncerStats {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.stats
}

// run runs waves until the queue is empty.
func (y *Syncer) run() {
	for {
		y.mu.Lock()
		wave := y.queue
		y.queue = nil
		if len(wave) == 0 {
			y.running = false
			y.mu.Unlock()
			return
		}
		y.mu.Unlock()
		y.runWave(wave)
	}
}

// runWave makes every sync of the wave durable, counts the wave and then
// calls every done; it reports whether it used syncfs.
func (y *Syncer) runWave(wave []syncWaiter) bool {
	errs := make([]error, len(wave))
	files := 0
	for _, w := range wave {
		if w.s.file != nil {
			files++
		}
	}
	fsUsed := y.FilesystemSyncAt > 0 && files >= y.FilesystemSyncAt && y.syncFilesystem() == nil
	if fsUsed {
		for i, w := range wave {
			if errs[i] = w.s.takeErr; errs[i] == nil {
				w.s.journal()
				w.s.release()
			}
		}
	} else if len(wave) == 1 {
		// Alone: no goroutine to start and wait for.
		errs[0] = wave[0].s.Run()
	} else {
		var wg sync.WaitGroup
		for i, w := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w.s.Run()
			}()
		}
		wg.Wait()
	}
	y.mu.Lock()
	y.stats.Waves++
	y.stats.Syncs += int64(len(wave))
	y.stats.LargestWave = max(y.stats.LargestWave, len(wave))
	if fsUsed {
		y.stats.FilesystemSyncs++
	}
	y.mu.Unlock()
	for i, w := range wave {
		w.done(errs[i])
	}
	return fsUsed
}

// syncFilesystem flushes the filesystem that holds the data directory.
// The directory stays open from the first wave on: syncfs reports the
// writeback errors of the filesystem since the descriptor was opened, so a
// descriptor opened for each wave could miss an error from before it.
func (y *Syncer) syncFilesystem() error {
	if y.dirFile == nil {
		d, err := os.Open(y.dir)
		if err != nil {
			return err
		}
		y.dirFile = d
	}
	for {
		err := unix.Syncfs(int(y.dirFile.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
