package metrics

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Mailbox returns the mailbox for a partition actor: protoactor's
// unbounded one, with every user message counted into
// sluice_partition_mailbox_messages while it waits and its wait, up to the
// end of its handling, observed in sluice_partition_mailbox_wait_seconds.
// On a nil Broker it is the plain mailbox.
func (m *Broker) Mailbox() actor.MailboxProducer {
	if m == nil {
		return actor.Unbounded()
	}
	return func() actor.Mailbox { return actor.Unbounded(&mailboxStats{m: m})() }
}

// mailboxStats watches one mailbox. Senders post concurrently, the actor
// receives one message at a time; posted keeps the post times in order.
type mailboxStats struct {
	m      *Broker
	mu     sync.Mutex
	posted []time.Time
}

func (s *mailboxStats) MailboxStarted() {}
func (s *mailboxStats) MailboxEmpty()   {}

func (s *mailboxStats) MessagePosted(msg any) {
	if _, system := msg.(actor.SystemMessage); system {
		return
	}
	s.m.c.mailboxDepth.Inc()
	s.mu.Lock()
	s.posted = append(s.posted, time.Now())
	s.mu.Unlock()
}

// MessageReceived is called once the message has been handled.
func (s *mailboxStats) MessageReceived(msg any) {
	if _, system := msg.(actor.SystemMessage); system {
		return
	}
	s.mu.Lock()
	if len(s.posted) == 0 {
		s.mu.Unlock()
		return
	}
	at := s.posted[0]
	s.posted = s.posted[1:]
	s.mu.Unlock()
	s.m.c.mailboxDepth.Dec()
	s.m.c.mailboxSeconds.Observe(time.Since(at).Seconds())
}
