package console

import (
	"net/http/httptest"
	"testing"
	"time"
)

// Rates are the record counts' differences over the time between samples;
// a counter that went back (a topic deleted) gives 0; only the last
// sampleCount rates are kept.
func TestThroughputSeries(t *testing.T) {
	var tp throughput
	t0 := time.Unix(1_700_000_000, 0)
	for i, n := range []int64{0, 100, 300, 50} {
		tp.add(sample{at: t0.Add(time.Duration(i) * 2 * time.Second), records: n})
	}
	times, rates := tp.series()
	if len(times) != 3 || rates[0] != 50 || rates[1] != 100 || rates[2] != 0 || times[0] != t0.Unix()+2 {
		t.Fatalf("times %v rates %v", times, rates)
	}
	for i := 0; i < 3*sampleCount; i++ {
		tp.add(sample{at: t0.Add(time.Duration(i) * time.Second), records: int64(i)})
	}
	if _, rates := tp.series(); len(rates) != sampleCount {
		t.Fatalf("%d rates kept", len(rates))
	}
	tp.reset()
	if times, _ := tp.series(); len(times) != 0 {
		t.Fatalf("after reset: %v", times)
	}
}

// A form is accepted only from the console's own origin, and only with the
// token of this console.
func TestSameOriginAndToken(t *testing.T) {
	for _, c := range []struct {
		origin, referer, site string
		want                  bool
	}{
		{"http://console:10470", "", "", true},
		{"", "http://console:10470/topics", "same-origin", true},
		{"http://evil.example", "", "", false},
		{"", "http://evil.example/x", "", false},
		{"", "", "", false},
		{"null", "", "", false},
		{"http://console:10470", "", "cross-site", false},
	} {
		r := httptest.NewRequest("POST", "http://console:10470/topics", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.referer != "" {
			r.Header.Set("Referer", c.referer)
		}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		if got := sameOrigin(r); got != c.want {
			t.Errorf("%+v: %v", c, got)
		}
	}
	a, b := newCSRF(), newCSRF()
	if !a.valid(a.token()) || a.valid(b.token()) || a.valid("") {
		t.Fatal("tokens do not tell consoles apart")
	}
}
