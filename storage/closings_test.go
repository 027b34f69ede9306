package storage

import (
	"testing"
	"time"
)

func TestClosingsWaitForTheirDirectoryOnly(t *testing.T) {
	c := NewClosings()
	doneA := c.Start("a")
	doneA2 := c.Start("a")
	doneB := c.Start("b")

	waited := make(chan string, 3)
	go func() { c.Wait("a"); waited <- "a" }()
	go func() { c.Wait("b"); waited <- "b" }()
	go func() { c.WaitAll(); waited <- "all" }()

	c.Wait("c") // nothing closes there
	doneB()
	if got := <-waited; got != "b" {
		t.Fatalf("%s returned before its closings ended", got)
	}
	doneA()
	doneA() // a second call changes nothing
	select {
	case got := <-waited:
		t.Fatalf("%s returned while a closing of a still runs", got)
	case <-time.After(20 * time.Millisecond):
	}
	doneA2()
	for range 2 {
		<-waited
	}
	c.Wait("a")

	var none *Closings
	none.Start("x")()
	none.Wait("x")
	none.WaitAll()
}

// A waiter waits only for the closings started before it: work a later
// closing waits for (a log being opened when its actor stops) must not
// wait for that closing in turn.
func TestClosingsWaiterIgnoresLaterClosings(t *testing.T) {
	c := NewClosings()
	first := c.Start("d")
	wait := c.Waiter("d")
	later := c.Start("d")
	defer later()
	first()
	wait() // returns though a closing of d still runs
}
