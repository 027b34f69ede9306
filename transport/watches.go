package transport

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/extensions"
)

// remoteWatches is the set of actors on other nodes that this node's
// actors watch. The guard delivers a Terminated from the network only when
// it names one of them for the actor it is addressed to: a node learns of
// the end of its own actors from its own actor system, never from a peer.
type remoteWatches struct {
	mu sync.Mutex
	// by watcher id, then watched PID ("address/id"), how many watches.
	m map[string]map[string]int
}

var watchesExtension = extensions.NextExtensionID()

func (w *remoteWatches) ExtensionID() extensions.ExtensionID { return watchesExtension }

func pidKey(pid *actor.PID) string { return pid.Address + "/" + pid.Id }

func (w *remoteWatches) add(watcher, watched *actor.PID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.m[watcher.Id]
	if set == nil {
		set = map[string]int{}
		w.m[watcher.Id] = set
	}
	set[pidKey(watched)]++
}

func (w *remoteWatches) remove(watcher, watched *actor.PID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.m[watcher.Id]
	k := pidKey(watched)
	if set[k]--; set[k] <= 0 {
		delete(set, k)
	}
	if len(set) == 0 {
		delete(w.m, watcher.Id)
	}
}

func (w *remoteWatches) watches(watcherID string, watched *actor.PID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[watcherID][pidKey(watched)] > 0
}

func watchesOf(system *actor.ActorSystem) *remoteWatches {
	if system == nil || system.Extensions == nil {
		return nil
	}
	w, _ := system.Extensions.Get(watchesExtension).(*remoteWatches)
	return w
}

// WatchRemote watches pid, an actor on another node, from the current
// actor: its Terminated (sent by that node, or by this one when the
// connection to it ends) reaches the actor. Actors watch remote PIDs only
// through it, so that the guard can tell an expected Terminated from a
// forged one. Pair it with UnwatchRemote when the actor stops watching.
func WatchRemote(ctx actor.Context, pid *actor.PID) {
	if w := watchesOf(ctx.ActorSystem()); w != nil {
		w.add(ctx.Self(), pid)
	}
	ctx.Watch(pid)
}

// UnwatchRemote ends a WatchRemote; call it also when the actor stops or
// the watched actor's Terminated arrived.
func UnwatchRemote(ctx actor.Context, pid *actor.PID) {
	if w := watchesOf(ctx.ActorSystem()); w != nil {
		w.remove(ctx.Self(), pid)
	}
	ctx.Unwatch(pid)
}
