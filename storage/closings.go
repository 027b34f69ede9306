package storage

import "sync"

// Closings are the logs being closed beside the actors that owned them
// (closing a log fsyncs it, and files that describe it may be written
// after). Whoever next uses a log's directory waits for its closing
// first: a replica started again opens the log only once the old one is
// closed, a removal deletes the directory only then, and a broker stops
// only when every log is closed. The zero value is ready; a nil
// *Closings tracks nothing.
type Closings struct {
	mu   sync.Mutex
	dirs map[string][]chan struct{}
	all  sync.WaitGroup
}

// NewClosings returns an empty set of closings.
func NewClosings() *Closings { return &Closings{} }

// Start records that the log of dir is being closed; done says it is.
func (c *Closings) Start(dir string) (done func()) {
	if c == nil {
		return func() {}
	}
	ch := make(chan struct{})
	c.mu.Lock()
	if c.dirs == nil {
		c.dirs = map[string][]chan struct{}{}
	}
	c.dirs[dir] = append(c.dirs[dir], ch)
	c.all.Add(1)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			rest := c.dirs[dir][:0]
			for _, other := range c.dirs[dir] {
				if other != ch {
					rest = append(rest, other)
				}
			}
			if len(rest) == 0 {
				delete(c.dirs, dir)
			} else {
				c.dirs[dir] = rest
			}
			c.mu.Unlock()
			close(ch)
			c.all.Done()
		})
	}
}

// Wait returns once every closing of dir started so far has ended.
func (c *Closings) Wait(dir string) { c.Waiter(dir)() }

// Waiter returns a function that waits for the closings of dir started
// before Waiter was called (not for later ones: work that a closing itself
// waits for must not wait for that closing).
func (c *Closings) Waiter(dir string) (wait func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	pending := append([]chan struct{}(nil), c.dirs[dir]...)
	c.mu.Unlock()
	return func() {
		for _, ch := range pending {
			<-ch
		}
	}
}

// WaitAll returns once every closing started so far has ended.
func (c *Closings) WaitAll() {
	if c != nil {
		c.all.Wait()
	}
}
