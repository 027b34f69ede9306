package main

// The metrics suite (-suite metrics): what a broker's Prometheus metrics
// cost. Two measurements on one broker (acks=1, 1 KiB records):
//
//   - produce throughput with and without a scraper reading /metrics every
//     second, side by side: in each round the same broker runs both, the
//     order alternating between rounds;
//   - the time and size of a scrape of a broker holding 1,000 partitions
//     with records in each, with the per-partition series and without
//     (--metrics-partition-labels=false).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/client"
)

const (
	metricsBegin = "<!-- metrics:begin -->"
	metricsEnd   = "<!-- metrics:end -->"
)

var metricsMarkers = mdSection{metricsBegin, metricsEnd}

type metricsReport struct {
	Suite      string        `json:"suite"`
	Started    time.Time     `json:"started"`
	Finished   time.Time     `json:"finished"`
	Command    string        `json:"command"`
	Machine    machine       `json:"machine"`
	LoadAvg    string        `json:"load_avg"`
	GoVersion  string        `json:"go_version"`
	Sluice     sluiceInfo    `json:"sluice"`
	Records    int           `json:"records_per_run"`
	RecordSize int           `json:"record_size"`
	Runs       []metricsRun  `json:"runs"`
	Scrapes    []scrapeStats `json:"scrapes"`
}

// metricsRun is one produce run, with or without the scraper.
type metricsRun struct {
	Round      int     `json:"round"`
	Scraped    bool    `json:"scraped"`
	RecsPerSec float64 `json:"records_per_second"`
	Scrapes    int     `json:"scrapes"` // during the run
	Err        string  `json:"error,omitempty"`
}

// scrapeStats are the scrapes of one broker holding Partitions partitions.
type scrapeStats struct {
	Partitions      int     `json:"partitions"`
	PartitionLabels bool    `json:"partition_labels"`
	MedianMs        float64 `json:"median_ms"`
	MaxMs           float64 `json:"max_ms"`
	Bytes           int     `json:"bytes"`
	Series          int     `json:"series"`
}

// runMetrics runs the metrics suite and writes its outputs.
func runMetrics(ctx context.Context, o options, root, base, outDir string) error {
	rep := &metricsReport{Suite: "metrics", Started: time.Now(), Command: commandLine(), Machine: machineInfo(base), LoadAvg: loadAvg(),
		RecordSize: 1024, Records: 2_000_000}
	if o.Quick {
		rep.Records = 200_000
	}
	buildDir := filepath.Join(base, "build")
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return err
	}
	logf("building sluice (%s) ...", o.SluiceRev)
	sb, err := buildSluice(ctx, root, o.SluiceRev, buildDir)
	if err != nil {
		return err
	}
	rep.Sluice = sluiceInfo{Rev: sb.rev, Commit: sb.commit, Subject: sb.subject, ClientDirty: sb.dirty, ClientRev: clientFrom}
	rep.GoVersion = goVersion(ctx)
	if help, _ := runCmd(ctx, "", nil, sb.bin, "broker", "-h"); !strings.Contains(help, "-http") {
		return errors.New("this sluice broker has no --http flag (not in `sluice broker -h`): nothing to measure")
	}

	for round := 1; round <= o.Runs; round++ {
		dir := filepath.Join(base, fmt.Sprintf("produce-%d", round))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		web, err := freeAddr()
		if err != nil {
			return err
		}
		c, err := startSluiceSingleWith(ctx, sb.bin, dir, []string{"--http", web})
		if err != nil {
			return err
		}
		t, err := newSluiceTarget(c.addrs, client.LeaderAck, 1, nil, sluiceOptions{linger: o.Linger, batchBytes: o.BatchBytes, maxInFlight: o.MaxInFlight})
		if err != nil {
			c.stop()
			return err
		}
		modes := []bool{false, true}
		if round%2 == 0 {
			modes = []bool{true, false}
		}
		for _, scraped := range modes {
			topic := fmt.Sprintf("metrics-%d-%v", round, scraped)
			if err := t.createTopic(ctx, topic); err != nil {
				t.close()
				c.stop()
				return err
			}
			stop, count := make(chan struct{}), make(chan int, 1)
			go func() {
				if !scraped {
					<-stop
					count <- 0
					return
				}
				n := 0
				tick := time.NewTicker(time.Second)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						count <- n
						return
					case <-tick.C:
						if _, _, err := scrapeOnce(web); err == nil {
							n++
						}
					}
				}
			}()
			r := runProduce(ctx, t, topic, rep.RecordSize, rep.Records, loadConfig{window: o.Window, maxPhase: o.MaxPhase, seed: uint64(9_000_000 + round)})
			close(stop)
			run := metricsRun{Round: round, Scraped: scraped, RecsPerSec: r.RecsPerSec, Scrapes: <-count, Err: r.Err}
			rep.Runs = append(rep.Runs, run)
			logf("[round %d/%d, scraped every second: %v] produce: %.0f records/s (%d scrapes)%s", round, o.Runs, scraped, r.RecsPerSec, run.Scrapes, errSuffix(r.Err, r.Capped))
		}
		t.close()
		c.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	for _, labels := range []bool{true, false} {
		st, err := measureScrapes(ctx, sb.bin, filepath.Join(base, fmt.Sprintf("scrape-%v", labels)), 1000, labels, o.Quick)
		if err != nil {
			return err
		}
		rep.Scrapes = append(rep.Scrapes, st)
		logf("scrape of %d partitions (partition labels %v): median %.1f ms, max %.1f ms, %d bytes, %d series",
			st.Partitions, labels, st.MedianMs, st.MaxMs, st.Bytes, st.Series)
	}
	rep.Finished = time.Now()
	return writeMetricsOutputs(rep, outDir)
}

// measureScrapes starts a broker, creates a topic of n partitions, writes a
// record into each, and times scrapes of its /metrics.
func measureScrapes(ctx context.Context, bin, dir string, n int, labels, quick bool) (scrapeStats, error) {
	st := scrapeStats{Partitions: n, PartitionLabels: labels}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	web, err := freeAddr()
	if err != nil {
		return st, err
	}
	c, err := startSluiceSingleWith(ctx, bin, dir, []string{"--http", web, "--metrics-partition-labels=" + strconv.FormatBool(labels)})
	if err != nil {
		return st, err
	}
	defer c.stop()
	admin, err := client.NewAdmin(c.addrs[0])
	if err != nil {
		return st, err
	}
	defer admin.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := admin.CreateTopic(cctx, client.TopicSpec{Name: "many", Partitions: int32(n), ReplicationFactor: 1}); err != nil {
		return st, err
	}
	p, err := client.NewProducer(c.addrs[0], client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		return st, err
	}
	for i := 0; i < n; i++ {
		p.Produce(cctx, &client.Record{Topic: "many", Partition: int32(i), Value: []byte("x")}, nil)
	}
	err = p.Flush(cctx)
	p.Close()
	if err != nil {
		return st, err
	}
	times := 20
	if quick {
		times = 5
	}
	var ms []float64
	for i := 0; i < times; i++ {
		start := time.Now()
		body, series, err := scrapeOnce(web)
		if err != nil {
			return st, err
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		st.Bytes, st.Series = body, series
	}
	slices.Sort(ms)
	st.MedianMs, st.MaxMs = ms[len(ms)/2], ms[len(ms)-1]
	return st, nil
}

// scrapeOnce reads addr's /metrics whole: its size and series count.
func scrapeOnce(addr string) (int, int, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("/metrics: %s", resp.Status)
	}
	series := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			series++
		}
	}
	return len(b), series, nil
}

func freeAddr() (string, error) {
	ports, err := freePorts(1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}

func writeMetricsOutputs(r *metricsReport, outDir string) error {
	return writeSuiteSection(outDir, "results-metrics.json", r, metricsMarkers, r.markdown(), "metrics")
}

// writeSuiteSection writes a suite's report as JSON to outDir/jsonName and
// puts its markdown section (between markers) into outDir/RESULTS.md.
func writeSuiteSection(outDir, jsonName string, report any, markers mdSection, md, what string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(outDir, jsonName)
	if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
		return err
	}
	mdPath := filepath.Join(outDir, "RESULTS.md")
	old, err := os.ReadFile(mdPath)
	if errors.Is(err, fs.ErrNotExist) {
		old = []byte("# Sluice benchmark results\n")
	} else if err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(markers.splice(string(old), md)), 0o644); err != nil {
		return err
	}
	logf("wrote the %s section of %s, and %s", what, mdPath, jsonPath)
	return nil
}

func (r *metricsReport) markdown() string {
	var b strings.Builder
	fmt.Fprintln(&b, metricsBegin)
	fmt.Fprintln(&b, "## What metrics cost")
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "`-suite metrics`, %s (%s), Sluice %s “%s”, %s. One broker, acks=1, %d records of %d B per run; "+
		"in each round the same broker produces once without and once with a scraper reading `/metrics` every second (order alternating).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Finished.Sub(r.Started).Round(time.Second), shortCommit(r.Sluice.Commit), r.Sluice.Subject,
		r.GoVersion, r.Records, r.RecordSize)
	fmt.Fprintln(&b, "| round | records/s, no scraper | records/s, scraped every second | scrapes | ratio |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- |")
	var ratios []float64
	for round := 1; ; round++ {
		var off, on *metricsRun
		for i := range r.Runs {
			if r.Runs[i].Round == round {
				if r.Runs[i].Scraped {
					on = &r.Runs[i]
				} else {
					off = &r.Runs[i]
				}
			}
		}
		if off == nil || on == nil {
			break
		}
		ratio := on.RecsPerSec / off.RecsPerSec
		ratios = append(ratios, ratio)
		fmt.Fprintf(&b, "| %d | %.0f | %.0f | %d | %.3f |\n", round, off.RecsPerSec, on.RecsPerSec, on.Scrapes, ratio)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		fmt.Fprintf(&b, "\nMedian ratio (scraped / not scraped): **%.3f**.\n", ratios[len(ratios)/2])
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| partitions | per-partition series | scrape median | scrape max | body | series |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- |")
	for _, s := range r.Scrapes {
		fmt.Fprintf(&b, "| %d | %v | %.1f ms | %.1f ms | %s | %d |\n", s.Partitions, s.PartitionLabels, s.MedianMs, s.MaxMs, fmtBytes(int64(s.Bytes)), s.Series)
	}
	fmt.Fprintln(&b, metricsEnd)
	return b.String()
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
