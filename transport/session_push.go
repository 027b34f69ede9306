package transport

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
)

// A push subscriber of a session's client (the client's own actor, which
// no broker can reach) is stood for on the broker by a session target: a
// process of the node's registry that writes what a pusher sends it on the
// session's stream, with the pusher as sender, and ends with the session.
// A SubscribeRequest that comes through a session names the session
// target instead of the client's actor, so the group's coordinator, on
// this broker or another, pushes through it and watches it like any
// subscriber.

// maxSessionTargets bounds the push subscribers of one session.
const maxSessionTargets = 1024

// sessionTargetPrefix starts the id of every session target: watches of
// them are accepted from other nodes (a coordinator that moved to another
// broker watches its members' targets here).
const sessionTargetPrefix = "session-push$"

// sessionSeq numbers the sessions of this process, for their targets' ids.
var sessionSeq atomic.Uint64

// sessionTargets are one session's targets, by the client actor's id.
type sessionTargets struct {
	system *actor.ActorSystem
	local  string
	w      *sessionWriter
	prefix string

	mu    sync.Mutex
	byID  map[string]*sessionTarget
	ended bool
}

func newSessionTargets(system *actor.ActorSystem, local string, w *sessionWriter) *sessionTargets {
	return &sessionTargets{system: system, local: local, w: w, byID: map[string]*sessionTarget{},
		prefix: fmt.Sprintf("%s%d$", sessionTargetPrefix, sessionSeq.Add(1))}
}

// subscribe points req at the session target of the actor it names,
// registering the target on first use; nil when the session has as many
// as it may.
func (ts *sessionTargets) subscribe(req *messages.SubscribeRequest) *messages.SubscribeRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byID[req.TargetId]
	if t == nil {
		if ts.ended || len(ts.byID) >= maxSessionTargets || req.TargetId == "" {
			return nil
		}
		t = &sessionTarget{system: ts.system, w: ts.w, to: req.TargetId}
		t.pid, _ = ts.system.ProcessRegistry.Add(t, ts.prefix+req.TargetId)
		ts.byID[req.TargetId] = t
	}
	req.TargetAddress, req.TargetId = t.pid.Address, t.pid.Id
	return req
}

// terminatedName is the type name of the message a session's client
// sends when one of its subscribers stops.
const terminatedName = "actor.Terminated"

// gone ends the target of the client's actor id, which stopped.
func (ts *sessionTargets) gone(id string) {
	ts.mu.Lock()
	t := ts.byID[id]
	delete(ts.byID, id)
	ts.mu.Unlock()
	if t != nil {
		t.end()
	}
}

// end removes the session's targets: their watchers hear that the
// subscribers are gone.
func (ts *sessionTargets) end() {
	ts.mu.Lock()
	ts.ended = true
	targets := ts.byID
	ts.byID = nil
	ts.mu.Unlock()
	for _, t := range targets {
		t.end()
	}
}

// sessionTarget is one subscriber's stand-in.
type sessionTarget struct {
	system *actor.ActorSystem
	w      *sessionWriter
	to     string // the client actor's id
	pid    *actor.PID

	mu       sync.Mutex
	watchers []*actor.PID
	ended    bool
}

// SendUserMessage writes a pusher's message on the stream. Only what a
// pusher sends is passed on: anything else that reaches the target (a
// client that learnt its id) is dropped.
func (t *sessionTarget) SendUserMessage(_ *actor.PID, message any) {
	_, msg, sender := actor.UnwrapEnvelope(message)
	switch msg.(type) {
	case *messages.PushAssignment, *messages.PushRecords:
		t.w.send(t.to, sender, msg, 0)
	}
}

// SendSystemMessage keeps the watchers, which hear of the session's end.
func (t *sessionTarget) SendSystemMessage(_ *actor.PID, message any) {
	switch m := message.(type) {
	case *actor.Watch:
		t.mu.Lock()
		ended := t.ended
		if !ended {
			t.watchers = append(t.watchers, m.Watcher)
		}
		t.mu.Unlock()
		if ended {
			t.terminated(m.Watcher)
		}
	case *actor.Unwatch:
		t.mu.Lock()
		for i, w := range t.watchers {
			if w.Equal(m.Watcher) {
				t.watchers = append(t.watchers[:i], t.watchers[i+1:]...)
				break
			}
		}
		t.mu.Unlock()
	}
}

// Stop does nothing: a target ends with its session.
func (t *sessionTarget) Stop(*actor.PID) {}

// end leaves the registry and tells the watchers the subscriber is gone.
func (t *sessionTarget) end() {
	t.system.ProcessRegistry.Remove(t.pid)
	t.mu.Lock()
	t.ended = true
	watchers := t.watchers
	t.watchers = nil
	t.mu.Unlock()
	for _, w := range watchers {
		t.terminated(w)
	}
}

func (t *sessionTarget) terminated(watcher *actor.PID) {
	if p, ok := t.system.ProcessRegistry.Get(watcher); ok {
		p.SendSystemMessage(watcher, &actor.Terminated{Who: t.pid, Why: actor.TerminatedReason_Stopped})
	}
}
