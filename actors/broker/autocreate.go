package broker

import "time"

// Topic auto-creation (--auto-create-topics) is bounded: one metadata
// request creates at most autoCreatePerRequest topics, and the broker
// asks for at most autoCreateRate a second (autoCreateBurst at once), so a
// request naming thousands of unknown topics creates a few; the others
// answer UNKNOWN_TOPIC_OR_PARTITION, which clients retry. A name already
// asked for is not asked again for autoCreateRetry.
const (
	autoCreatePerRequest = 20
	autoCreateRate       = 20.0
	autoCreateBurst      = 100.0
	autoCreateRetry      = 5 * time.Second
)

// autoCreateLimit is a token bucket over the topics asked for, and the
// names asked for recently.
type autoCreateLimit struct {
	tokens float64
	last   time.Time
	asked  map[string]time.Time
}

// allow reports whether name may be asked for now, when the request has
// already asked for inRequest topics. A name asked for within
// autoCreateRetry is not asked again, but counts as being created.
func (l *autoCreateLimit) allow(name string, inRequest int, now time.Time) (ask, creating bool) {
	if l.asked == nil {
		l.asked, l.tokens, l.last = map[string]time.Time{}, autoCreateBurst, now
	}
	if at, ok := l.asked[name]; ok && now.Sub(at) < autoCreateRetry {
		return false, true
	}
	l.tokens = min(autoCreateBurst, l.tokens+now.Sub(l.last).Seconds()*autoCreateRate)
	l.last = now
	if inRequest >= autoCreatePerRequest || l.tokens < 1 {
		return false, false
	}
	l.tokens--
	for n, at := range l.asked { // forget old names; few are kept
		if now.Sub(at) >= autoCreateRetry {
			delete(l.asked, n)
		}
	}
	l.asked[name] = now
	return true, true
}

// forget drops name from the names asked for: its creation failed, and
// the next request naming it asks again.
func (l *autoCreateLimit) forget(name string) { delete(l.asked, name) }
