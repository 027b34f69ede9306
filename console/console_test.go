package console

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Rates are the record counters' differences over the time between
// samples, summed over the topics shown; a topic whose counter went back (deleted
// and created again) or that is new gives 0; only the last sampleCount
// rates are kept.
func TestThroughputSeries(t *testing.T) {
	var tp throughput
	t0 := time.Unix(1_700_000_000, 0)
	for i, n := range []map[string]int64{{"a": 0}, {"a": 100, "b": 40}, {"a": 300, "b": 60}, {"a": 50, "b": 100}} {
		tp.add(sample{at: t0.Add(time.Duration(i) * 2 * time.Second), produced: n, fetched: map[string]int64{"a": int64(i) * 10}})
	}
	all := func(string) bool { return true }
	times, rates, fetched := tp.series(all)
	if len(fetched) != 3 || fetched[0] != 5 || fetched[2] != 5 {
		t.Fatalf("fetched rates %v", fetched)
	}
	if len(times) != 3 || rates[0] != 50 || rates[1] != 110 || rates[2] != 20 || times[0] != t0.Unix()+2 {
		t.Fatalf("times %v rates %v", times, rates)
	}
	if _, rates, _ := tp.series(func(topic string) bool { return topic == "b" }); rates[0] != 0 || rates[1] != 10 || rates[2] != 20 {
		t.Fatalf("topic b alone: rates %v", rates)
	}
	for i := 0; i < 3*sampleCount; i++ {
		tp.add(sample{at: t0.Add(time.Duration(i) * time.Second), produced: map[string]int64{"a": int64(i)}})
	}
	if _, rates, _ := tp.series(all); len(rates) != sampleCount {
		t.Fatalf("%d rates kept", len(rates))
	}
	tp.reset()
	if times, _, _ := tp.series(all); len(times) != 0 {
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
	alice := visitor{principal: "User:alice", session: "s1"}
	if !a.valid(a.token(alice), alice) || a.valid(b.token(alice), alice) || a.valid("", alice) {
		t.Fatal("tokens do not tell consoles apart")
	}
	if a.valid(a.token(alice), visitor{principal: "User:bob", session: "s1"}) {
		t.Fatal("one visitor's token serves another")
	}
	// Without TLS every visitor is the same principal: the session tells
	// them apart.
	if a.valid(a.token(visitor{session: "s1"}), visitor{session: "s2"}) {
		t.Fatal("one session's token serves another")
	}
}

// A large key or value is shown cut, with its size.
func TestShowCutsLargeValues(t *testing.T) {
	big := strings.Repeat("v", 3*maxShownBytes)
	got := show([]byte(big), "text", maxShownBytes)
	if len(got) > maxShownBytes+100 || !strings.Contains(got, fmt.Sprintf("(%d bytes, the first %d shown)", len(big), maxShownBytes)) {
		t.Fatalf("%d characters shown of %d bytes: ...%q", len(got), len(big), got[len(got)-60:])
	}
	if got := show([]byte("small"), "text", maxShownBytes); got != "small" {
		t.Fatalf("a small value: %q", got)
	}
}
