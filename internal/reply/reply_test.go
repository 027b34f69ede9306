package reply

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// echo answers every string it gets, after delay when it is "slow".
func echo(system *actor.ActorSystem, delay time.Duration) *actor.PID {
	return system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			if s == "slow" {
				time.Sleep(delay) // an actor that works before it answers
			}
			ctx.Respond("re: " + s)
		}
	}))
}

func TestWaitOutcomes(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	pid := echo(system, 200*time.Millisecond)

	if res, err := Wait(system, pid, "hello", 5*time.Second); err != nil || res != "re: hello" {
		t.Fatalf("answer: %v, %v", res, err)
	}
	if res, err := Wait(system, pid, "slow", 20*time.Millisecond); !errors.Is(err, actor.ErrTimeout) || res != nil {
		t.Fatalf("slow answer: %v, %v; want ErrTimeout", res, err)
	}
	gone := system.NewLocalPID("nobody-here")
	if res, err := Wait(system, gone, "hello", 5*time.Second); !errors.Is(err, actor.ErrDeadLetter) || res != nil {
		t.Fatalf("to no actor: %v, %v; want ErrDeadLetter", res, err)
	}
}

// Whatever comes at once (answers, dead letters, the timeout), the first
// is delivered once and the reply address is gone from the registry.
func TestFirstOutcomeWins(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	for round := range 200 {
		var delivered atomic.Int32
		outcomes := make(chan outcome, 10)
		pid := start(system, time.Duration(round%3)*time.Microsecond, func(res any, err error) {
			delivered.Add(1)
			outcomes <- outcome{res, err}
		})
		proc, _ := system.ProcessRegistry.Get(pid)
		var senders sync.WaitGroup
		for i := range 4 {
			senders.Add(1)
			go func() {
				defer senders.Done()
				if i%2 == 0 {
					proc.SendUserMessage(pid, &actor.DeadLetterResponse{Target: pid})
				} else {
					proc.SendUserMessage(pid, i)
				}
			}()
		}
		senders.Wait()
		o := <-outcomes
		if o.err == nil && o.res == nil || o.err != nil && o.res != nil {
			t.Fatalf("round %d: outcome %v, %v mixes an answer and an error", round, o.res, o.err)
		}
		time.Sleep(50 * time.Microsecond) // a timer that fired late
		if n := delivered.Load(); n != 1 {
			t.Fatalf("round %d: %d outcomes delivered", round, n)
		}
		if _, ok := system.ProcessRegistry.Get(pid); ok {
			t.Fatalf("round %d: the reply address is still registered", round)
		}
	}
}

// A system message (a forged Terminated, a watch) neither answers nor ends
// a request.
func TestSystemMessagesAreNotAnswers(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	outcomes := make(chan outcome, 2)
	pid := start(system, 50*time.Millisecond, func(res any, err error) { outcomes <- outcome{res, err} })
	proc, _ := system.ProcessRegistry.Get(pid)
	proc.SendSystemMessage(pid, &actor.Terminated{Who: pid})
	if o := <-outcomes; !errors.Is(o.err, actor.ErrTimeout) {
		t.Fatalf("outcome %v, %v; want the timeout", o.res, o.err)
	}
}

// Ask's callbacks run on the asking actor, one outcome per request: slow
// answers past the timeout count as timeouts, and their late answers are
// dropped.
func TestAskRunsOnTheActor(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	const n = 40
	a := &asker{target: echo(system, 5*time.Millisecond), timeout: 100 * time.Millisecond, done: make(chan struct{}), want: n}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	for range n {
		system.Root.Send(pid, "go")
	}
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("not every request ended")
	}
	time.Sleep(200 * time.Millisecond) // late answers, if any, would add outcomes
	a.mu.Lock()
	defer a.mu.Unlock()
	answered, timedOut := 0, 0
	for _, g := range a.got {
		switch g {
		case "re: slow":
			answered++
		case actor.ErrTimeout.Error():
			timedOut++
		default:
			t.Fatalf("outcome %q", g)
		}
	}
	// The echo answers one request each 5 ms: the first ones in time, the
	// last ones of the 40 (200 ms of work) after their 100 ms timeout.
	if answered+timedOut != n || answered == 0 || timedOut == 0 {
		t.Fatalf("%d answered, %d timed out, of %d", answered, timedOut, n)
	}
}

// asker asks target once per "go" and records each outcome, checking that
// its callbacks never run beside its Receive (they run on the actor, as
// messages do).
type asker struct {
	target  *actor.PID
	timeout time.Duration
	inside  atomic.Bool
	mu      sync.Mutex
	got     []string
	done    chan struct{}
	want    int
}

func (a *asker) enter() func() {
	if !a.inside.CompareAndSwap(false, true) {
		panic("a callback ran beside the actor")
	}
	return func() { a.inside.Store(false) }
}

func (a *asker) Receive(ctx actor.Context) {
	defer a.enter()()
	if msg, ok := ctx.Message().(string); ok && msg == "go" {
		Ask(ctx, a.target, "slow", a.timeout, func(res any, err error) {
			defer a.enter()()
			time.Sleep(time.Millisecond) // room for a Receive to overlap, were it possible
			a.mu.Lock()
			defer a.mu.Unlock()
			switch {
			case err != nil:
				a.got = append(a.got, err.Error())
			default:
				a.got = append(a.got, res.(string))
			}
			if len(a.got) == a.want {
				close(a.done)
			}
		})
	}
}

// pinger asks target n times in a row, one request after the other, and
// closes done; ask is the way it asks.
type pinger struct {
	target *actor.PID
	n      int
	done   chan struct{}
	ask    func(ctx actor.Context, target *actor.PID, then func(res any, err error))
}

func (p *pinger) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		p.next(ctx)
	}
}

func (p *pinger) next(ctx actor.Context) {
	if p.n == 0 {
		close(p.done)
		return
	}
	p.n--
	p.ask(ctx, p.target, func(any, error) { p.next(ctx) })
}

func benchmarkAsk(b *testing.B, ask func(ctx actor.Context, target *actor.PID, then func(res any, err error))) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	target := echo(system, 0)
	p := &pinger{target: target, n: b.N, done: make(chan struct{}), ask: ask}
	b.ResetTimer()
	system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	<-p.done
}

// BenchmarkAsk is a request and its answer through Ask.
func BenchmarkAsk(b *testing.B) {
	benchmarkAsk(b, func(ctx actor.Context, target *actor.PID, then func(any, error)) {
		Ask(ctx, target, "hello", 10*time.Second, then)
	})
}

// BenchmarkFuture is the same through protoactor's RequestFuture and
// ReenterAfter, for comparison.
func BenchmarkFuture(b *testing.B) {
	benchmarkAsk(b, func(ctx actor.Context, target *actor.PID, then func(any, error)) {
		ctx.ReenterAfter(ctx.RequestFuture(target, "hello", 10*time.Second), then)
	})
}
