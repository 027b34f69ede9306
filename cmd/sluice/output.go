package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// outputFormat is the --format of commands that print tables: text for
// people, json for programs (one object per line).
type outputFormat string

func (f *outputFormat) String() string { return string(*f) }

func (f *outputFormat) Set(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("want text or json")
	}
	*f = outputFormat(s)
	return nil
}

func (f *outputFormat) json() bool { return *f == "json" }

// formatFlag adds --format text|json to fs.
func formatFlag(fs *flag.FlagSet) *outputFormat {
	f := outputFormat("text")
	fs.Var(&f, "format", "output: text, or json (one object per line)")
	return &f
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// meter counts what a long command has done, for its progress line.
type meter struct {
	records atomic.Int64
	bytes   atomic.Int64
}

func (m *meter) add(records, bytes int) {
	m.records.Add(int64(records))
	m.bytes.Add(int64(bytes))
}

// showProgress redraws one status line on w every second (records, bytes,
// the rate of the last second, elapsed; of total records when total > 0)
// until the returned func is called. It draws nothing unless w is a
// terminal, so piped and redirected output stays clean.
func showProgress(w io.Writer, label string, total int64, m *meter) (stop func()) {
	if !isTerminal(w) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastRecords, lastBytes int64
		drawn := false
		for {
			select {
			case <-done:
				if drawn {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
				n, b := m.records.Load(), m.bytes.Load()
				of := ""
				if total > 0 {
					of = fmt.Sprintf("/%d", total)
				}
				fmt.Fprintf(w, "\r\033[K%s: %d%s records, %s, %.0f records/s, %.1f MB/s, %s",
					label, n, of, humanBytes(b), float64(n-lastRecords), float64(b-lastBytes)/1e6,
					time.Since(start).Round(time.Second))
				lastRecords, lastBytes, drawn = n, b, true
			}
		}
	}()
	return func() { close(done); <-finished }
}

func humanBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
