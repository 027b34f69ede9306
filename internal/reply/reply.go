// Package reply sends requests to actors and takes their answers without
// protoactor's futures racing.
//
// A protoactor Future is its own reply address and has its own timeout
// timer; when the timer fires while an answer or a dead letter arrives, both
// write the future's result unguarded (a data race, and a result that may
// pair an answer with ErrTimeout). Here each request gets a reply address
// of its own, and the first of its answer, a dead letter and its timeout
// wins; the others are dropped. Only that one reaches the waiting side: a
// channel for Wait and Pending, a Future without a timer (so written once) for Ask.
package reply

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrCancelled is the outcome of a request whose reply address was stopped
// before an answer came.
var ErrCancelled = errors.New("reply: the request was cancelled")

// Ask sends msg to target and runs then on ctx's actor (as ReenterAfter
// does) with the first of: the answer (err nil), actor.ErrDeadLetter when
// target does not exist, actor.ErrTimeout after timeout.
func Ask(ctx actor.Context, target *actor.PID, msg any, timeout time.Duration, then func(res any, err error)) {
	system := ctx.ActorSystem()
	fut := actor.NewFuture(system, -1) // no timer: only the outcome below writes it
	futProc, _ := system.ProcessRegistry.Get(fut.PID())
	addr := start(system, timeout, func(res any, err error) {
		if err != nil {
			res = failure{err}
		}
		futProc.SendUserMessage(fut.PID(), res)
	})
	ctx.ReenterAfter(fut, func(res any, _ error) {
		if f, ok := res.(failure); ok {
			then(nil, f.err)
			return
		}
		then(res, nil)
	})
	ctx.RequestWithCustomSender(target, msg, addr)
}

// Wait sends msg to target from outside any actor and waits for the first
// of: the answer, actor.ErrDeadLetter, actor.ErrTimeout after timeout.
func Wait(system *actor.ActorSystem, target *actor.PID, msg any, timeout time.Duration) (any, error) {
	p := NewPending(system, timeout)
	system.Root.RequestWithCustomSender(target, msg, p.PID())
	return p.Wait()
}

// Pending is a reply address for a request sent by other means (an
// envelope with headers): give PID as its sender, then Wait.
type Pending struct {
	pid  *actor.PID
	done chan outcome // written once
	once sync.Once
	out  outcome
}

// NewPending registers a reply address that times out after timeout.
func NewPending(system *actor.ActorSystem, timeout time.Duration) *Pending {
	p := &Pending{done: make(chan outcome, 1)}
	p.pid = start(system, timeout, func(res any, err error) { p.done <- outcome{res, err} })
	return p
}

// PID is the address to send the request from.
func (p *Pending) PID() *actor.PID { return p.pid }

// Wait returns the request's outcome: the answer, actor.ErrDeadLetter or
// actor.ErrTimeout.
func (p *Pending) Wait() (any, error) {
	p.once.Do(func() { p.out = <-p.done })
	return p.out.res, p.out.err
}

type outcome struct {
	res any
	err error
}

// OnAnswer returns a reply address of its own: deliver runs once, with the
// first of an answer, a dead letter and the timeout, on the goroutine that
// brings it (it must not block).
func OnAnswer(system *actor.ActorSystem, timeout time.Duration, deliver func(res any, err error)) *actor.PID {
	return start(system, timeout, deliver)
}

// failure carries an error through a Future's result.
type failure struct{ err error }

// start registers a one-shot reply address that hands its first outcome
// to deliver, once, and then unregisters itself.
func start(system *actor.ActorSystem, timeout time.Duration, deliver func(res any, err error)) *actor.PID {
	p := &process{system: system, deliver: deliver}
	p.self, _ = system.ProcessRegistry.Add(p, "reply"+system.ProcessRegistry.NextId())
	p.timer.Store(time.AfterFunc(timeout, func() { p.finish(nil, actor.ErrTimeout) }))
	return p.self
}

// process is a reply address: an actor.Process that takes one outcome.
type process struct {
	system  *actor.ActorSystem
	self    *actor.PID
	timer   atomic.Pointer[time.Timer] // stopped once done, to free it early
	deliver func(res any, err error)
	done    atomic.Bool
}

var _ actor.Process = (*process)(nil)

func (p *process) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	if _, ok := msg.(*actor.DeadLetterResponse); ok {
		p.finish(nil, actor.ErrDeadLetter)
		return
	}
	p.finish(msg, nil)
}

// SendSystemMessage drops system messages: an answer is a user message,
// and nothing else may end the request early.
func (p *process) SendSystemMessage(*actor.PID, any) {}

func (p *process) Stop(*actor.PID) { p.finish(nil, ErrCancelled) }

func (p *process) finish(res any, err error) {
	if !p.done.CompareAndSwap(false, true) {
		return
	}
	p.system.ProcessRegistry.Remove(p.self)
	if t := p.timer.Load(); t != nil {
		t.Stop() // nil only when the timeout came before start stored it
	}
	p.deliver(res, err)
}
