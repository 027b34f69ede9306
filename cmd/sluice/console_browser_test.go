package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshotDir is where browser tests save their screenshots:
// $SLUICE_TEST_ARTIFACTS, else sluice-console-screenshots in the temp dir.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("SLUICE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sluice-console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The console's pages in a real browser (Debian's chromium, headless) on a
// three-broker cluster: each page loads and shows what the CLI shows, and
// a screenshot of each is saved.
func TestConsoleInBrowser(t *testing.T) {
	chromium := needTool(t, "chromium")
	c := startCluster(t, 3)
	c.createTopic("shop", 3, 3, nil)
	c.waitFullyReplicated("shop", time.Minute)
	b := c.brokers[1]
	b.cli("alice:{\"item\":\"tea\"}\nbob:{\"item\":\"cake\"}\n", "produce", "shop", "--key-delimiter", ":", "--partition", "0")
	b.cli("", "consume", "shop", "--group", "billing", "--from-beginning", "--max", "2")
	web := "http://" + httpAddr(t, b)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	dir := screenshotDir(t)
	desc := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "shop", "--format", "json"))[0]
	for _, page := range []struct {
		name, path, selector string
		want                 []string
	}{
		{"overview", "/", "#broker-table", []string{"controller", "alive"}},
		{"topics", "/topics", "#topic-table", []string{"shop"}},
		{"topic", "/topics/shop", "#partition-table", []string{ids(desc.Partitions[0].ISR)}},
		{"groups", "/groups/billing", "#offset-table", []string{"shop"}},
		{"messages", "/messages?topic=shop&partition=0&from=start&format=json", "#message-table", []string{"alice", "\"item\": \"tea\"", "bob"}},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(web+page.path), chromedp.WaitVisible(page.selector)); err != nil {
			t.Fatalf("%s: %v", page.name, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(page.selector))
		if err != nil {
			t.Fatalf("%s: %v", page.name, err)
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
		if err != nil {
			t.Fatalf("%s: screenshot: %v", page.name, err)
		}
		for _, w := range page.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s page: %q not in %q", page.name, w, text)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, page.name+".png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Long names and values wrap inside the window instead of widening
	// the page.
	long := "long-" + strings.Repeat("n", 200)
	c.createTopic(long, 1, 1, nil)
	b.cli(strings.Repeat("v", 3000)+"\n", "produce", long)
	for _, path := range []string{"/topics", "/topics/" + long, "/messages?topic=" + long + "&partition=0&from=start"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(web+path), chromedp.WaitVisible(chromedp.CSS("main > h1"))); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !fits {
			t.Errorf("%s is wider than the window", path)
		}
	}

	// The overview's chart draws the cluster's produce and fetch rates
	// while a producer and a consumer run.
	done := make(chan struct{})
	defer close(done)
	repeat := func(stdin string, args ...string) {
		for {
			select {
			case <-done:
				return
			default:
			}
			runCLI(t, stdin, args...)
		}
	}
	go repeat(strings.Repeat("x\n", 2000), "produce", "shop", "--broker", b.Addr)
	go repeat("", "consume", "shop", "--partition", "0", "--from-beginning", "--max", "2000", "--broker", b.Addr)
	if err := chromedp.Do(ctx, chromedp.Navigate(web+"/"), chromedp.WaitVisible("#chart canvas")); err != nil {
		t.Fatalf("overview chart: %v", err)
	}
	eventually(t, time.Minute, func() string {
		// A few points, so that the screenshot shows lines.
		if points, err := chromedp.Run(ctx, chromedp.AttributeValue("#chart", "data-points")); err != nil {
			return err.Error()
		} else if n, _ := strconv.Atoi(points.Value); n < 3 {
			return fmt.Sprintf("the chart has %q points", points.Value)
		}
		for _, rate := range []string{"data-last-produced", "data-last-fetched"} {
			last, err := chromedp.Run(ctx, chromedp.AttributeValue("#chart", rate))
			if err != nil {
				return err.Error()
			}
			if n, _ := strconv.Atoi(last.Value); n <= 0 {
				return fmt.Sprintf("the chart's %s is %q", rate, last.Value)
			}
		}
		return ""
	})
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overview.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
}
