package partition

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// Disk work that takes long (opening the log and restoring the producer
// state; a follower's truncation, which rereads the log to rebuild it; a
// reset; retention; moving a corrupt log aside; a write that waits on the
// disk) runs beside the actor. While it runs, the work owns the log and
// the producer state: the actor touches neither, and keeps every message
// that arrives (and every answer to its own requests) to handle
// afterwards, in the order they came. So no handler ever sees the log
// mid-change, and none blocks the mailbox on the disk.

// logWorkDone brings the outcome of disk work back to the actor.
type logWorkDone struct {
	// panicked is set when the work panicked: the log's state is unknown.
	panicked error
	// of is the work's p.working: an outcome of work a stopped or
	// restarted actor waited for is not carried out again.
	of chan struct{}
	// then carries the outcome out on the actor.
	then func(ctx actor.Context)
}

// keptMessage is a message that arrived while disk work ran, with what
// its handler reads of it.
type keptMessage struct {
	msg    any
	sender *actor.PID
	header actor.ReadonlyMessageHeader
	// resume, when set, is an answer's continuation (reply.Ask) instead.
	resume func()
}

// keptContext hands a kept message to the handlers as if it had just
// arrived.
type keptContext struct {
	actor.Context
	kept keptMessage
}

func (c keptContext) Message() any                               { return c.kept.msg }
func (c keptContext) Sender() *actor.PID                         { return c.kept.sender }
func (c keptContext) MessageHeader() actor.ReadonlyMessageHeader { return c.kept.header }

// besideLog runs work beside the actor, after a file write that still
// runs (writeFiles; its outcome is then ignored, as the work may change
// the files); done, on the actor, gets what it returned. Until then the
// actor keeps its messages (receive).
func (p *partitionActor) besideLog(ctx actor.Context, work func() error, done func(ctx actor.Context, err error)) {
	p.working = make(chan struct{})
	finished, writing := p.working, p.writing
	p.writing = nil
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		if writing != nil {
			<-writing
		}
		var err, panicked error
		func() {
			defer func() {
				if r := recover(); r != nil {
					panicked = fmt.Errorf("disk work panicked: %v", r)
				}
			}()
			err = work()
		}()
		close(finished)
		root.Send(self, logWorkDone{of: finished, panicked: panicked, then: func(ctx actor.Context) { done(ctx, err) }})
	}()
}

// receive handles a message now, or keeps it while disk work runs.
func (p *partitionActor) receive(ctx actor.Context) {
	if done, ok := ctx.Message().(logWorkDone); ok {
		if done.of != p.working {
			return
		}
		p.working = nil
		if done.panicked != nil {
			p.failLog(ctx, done.panicked) // as a panic on the actor would restart it
		} else {
			done.then(ctx)
		}
		p.handleKept(ctx)
		return
	}
	if p.working != nil {
		p.kept = append(p.kept, keptMessage{msg: ctx.Message(), sender: ctx.Sender(), header: ctx.MessageHeader()})
		return
	}
	p.handle(ctx)
}

// resumeOnActor runs an answer's continuation now, or after the disk work
// that runs.
func (p *partitionActor) resumeOnActor(resume func()) {
	if p.working != nil {
		p.kept = append(p.kept, keptMessage{resume: resume})
		return
	}
	resume()
}

// handleKept handles the kept messages in order, until one starts disk
// work again.
func (p *partitionActor) handleKept(ctx actor.Context) {
	for len(p.kept) > 0 && p.working == nil {
		k := p.kept[0]
		p.kept[0] = keptMessage{}
		p.kept = p.kept[1:]
		if k.resume != nil {
			k.resume()
			continue
		}
		p.handle(keptContext{Context: ctx, kept: k})
	}
	if len(p.kept) == 0 {
		p.kept = nil
	}
}
