package controller

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// The controller's metadata store calls (Consul calls of up to
// storeTimeout each) run beside the actor, one step at a time: the actor
// plans a change against its snapshot, a goroutine writes it and loads the
// store again, and the outcome comes back as storeDone, whose finish runs
// on the actor. While a step is out, requests that would write wait in
// deferred and are delivered again, in their order and with their sender
// and headers, once it is back; everything else (the metadata and
// membership the broker feeds in, a stop) is taken at once. A controller
// that stops (its lock lost, its broker stopping) answers the request of
// the step out and those deferred, as their senders wait on them.

// storeTimeout bounds one metadata store call.
const storeTimeout = 10 * time.Second

func storeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// storeStep is the part of a change that talks to the store. It runs off
// the actor and must touch nothing of it: what it needs is captured when
// it is planned, and what it found goes back inside the finish it returns.
type storeStep func(store cluster.MetadataStore, fence cluster.Fence) (finish func(ctx actor.Context))

// storeDone brings a step's outcome back to the actor: the snapshot loaded
// after it (nil if it did not load, or failed to) and what is left to do.
// owner is the controller that sent the step: a controller restarted in
// place (same PID, new state) ignores its predecessor's.
type storeDone struct {
	owner   *controllerActor
	snap    *cluster.Snapshot
	loadErr error
	finish  func(ctx actor.Context)
}

// beside runs step beside the actor, then, with reload, loads the store's
// snapshot. The controller is busy until storeDone is back.
func (c *controllerActor) beside(ctx actor.Context, reload bool, step storeStep) {
	c.busy, c.inflight = true, nil
	self, root := ctx.Self(), ctx.ActorSystem().Root
	store, fence := c.store, c.lead.Fence
	go func() {
		done := &storeDone{owner: c}
		if step != nil {
			done.finish = step(store, fence)
		}
		if reload {
			sctx, cancel := storeContext()
			done.snap, done.loadErr = store.Load(sctx)
			cancel()
		}
		root.Send(self, done)
	}()
}

// besideFor is beside for a step the current request waits on: a stop
// before it is back answers the request.
func (c *controllerActor) besideFor(ctx actor.Context, reload bool, step storeStep) {
	c.beside(ctx, reload, step)
	c.inflight = envelopeOf(ctx)
}

// onStoreDone adopts the loaded snapshot, finishes the step, and goes on
// with what waited for it: elections asked for meanwhile, then the
// deferred requests.
func (c *controllerActor) onStoreDone(ctx actor.Context, msg *storeDone) {
	if msg.owner != c {
		return // the step of a controller this one replaced; its request was answered
	}
	c.busy, c.inflight = false, nil
	switch {
	case msg.loadErr != nil:
		c.cfg.Logger.Warn("controller cannot load metadata", "error", msg.loadErr)
	case msg.snap != nil && (c.snap == nil || msg.snap.Index >= c.snap.Index):
		c.snap = msg.snap
		c.electAgain = c.electAgain || c.uncleanMayElect()
	}
	if msg.finish != nil {
		msg.finish(ctx)
	}
	if !c.busy && c.electAgain {
		c.electAgain = false
		c.electAll(ctx)
	}
	if !c.busy && len(c.deferred) > 0 {
		for _, env := range c.deferred {
			ctx.Send(ctx.Self(), env)
		}
		c.deferred = nil
	}
}

// deferUntilIdle keeps the current request for when no step is out, and
// reports whether it did.
func (c *controllerActor) deferUntilIdle(ctx actor.Context) bool {
	if !c.busy {
		return false
	}
	c.deferred = append(c.deferred, envelopeOf(ctx))
	return true
}

// envelopeOf is the current message with its sender and headers.
func envelopeOf(ctx actor.Context) *actor.MessageEnvelope {
	env := &actor.MessageEnvelope{Message: ctx.Message(), Sender: ctx.Sender()}
	if h := ctx.MessageHeader(); h != nil {
		for _, k := range h.Keys() {
			env.SetHeader(k, h.Get(k))
		}
	}
	return env
}

// answerWaiting answers, as the controller stops, the request whose step
// is out (REQUEST_TIMED_OUT: its write may or may not be made) and the
// deferred ones (NOT_CONTROLLER: sent again, they reach the next one).
func (c *controllerActor) answerWaiting(ctx actor.Context) {
	if env := c.inflight; env != nil && env.Sender != nil {
		ctx.Send(env.Sender, failureOf(env.Message, messages.ErrorCode_REQUEST_TIMED_OUT,
			"the controller stopped before its metadata write was confirmed; it may or may not have been made"))
	}
	for _, env := range c.deferred {
		if env.Sender != nil {
			ctx.Send(env.Sender, failureOf(env.Message, messages.ErrorCode_NOT_CONTROLLER, "the controller stopped"))
		}
	}
	c.inflight, c.deferred = nil, nil
}
