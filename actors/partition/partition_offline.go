package partition

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors/replica"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/storage"
)

// A replica that cannot serve goes offline and says so:
//   - a log that fails to open (a CRC mismatch in the middle of it), or
//     whose fsync or write fails, leaves the replica without a log;
//   - the replica reports itself to the controller (ReplicaOfflineRequest)
//     until the controller has moved leadership to another in-sync replica
//     and taken this one out of the ISR;
//   - a log whose fsync or write failed is not opened again in this
//     process: Linux drops the dirty pages of a failed fsync and reports
//     the next one as a success, so only a restart, which recovers the log
//     from what is really on disk, brings it back;
//   - a corrupt log is moved aside (kept for the operator, never deleted)
//     once another replica leads, and the replica is refilled from that
//     leader from scratch: it rejoins the ISR through the leader's normal
//     ISR expansion, like any follower that caught up.

// FailedLogs remembers, for the life of the process, the partition
// directories whose log failed.
type FailedLogs struct {
	mu   sync.Mutex
	dirs map[string]error
}

func NewFailedLogs() *FailedLogs { return &FailedLogs{dirs: map[string]error{}} }

func (f *FailedLogs) add(dir string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs[dir] = err
}

func (f *FailedLogs) get(dir string) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dirs[dir]
}

// logFailed makes the partition give up its log; sent to self when a read
// finds corruption while the actor is in the middle of serving.
type logFailed struct {
	gen uint64
	err error
}

// failLog takes the log offline for the rest of this process: every
// request waiting on it is answered, the controller is told, and the log
// is not opened again until the broker restarts.
func (p *partitionActor) failLog(ctx actor.Context, err error) {
	if p.log == nil {
		return
	}
	p.cfg.Logger.Error("partition storage failed: the replica is offline until the broker restarts",
		"partition", p.cfg.TP, "error", err)
	p.cfg.FailedLogs.add(p.cfg.Dir, err)
	p.stepDown(ctx, "the partition's storage failed")
	l, cfg := p.log, p.cfg
	closed := p.cfg.Broker.Closings.Start(p.cfg.Dir)
	go func() {
		defer closed()
		if cerr := l.Close(); cerr != nil {
			cfg.Logger.Warn("closing a failed partition log", "partition", cfg.TP, "error", cerr)
		}
	}()
	p.log = nil
	p.openErr = fmt.Errorf("the partition's storage failed; it is offline until the broker restarts: %w", err)
	p.corrupt = false
	p.publishStatus()
	p.reportOffline(ctx)
}

// onLogFailed handles a logFailed sent by this role.
func (p *partitionActor) onLogFailed(ctx actor.Context, msg logFailed) {
	if msg.gen == p.gen {
		p.failLog(ctx, msg.err)
	}
}

// unusable runs while the replica has no log: report it, and repair a
// corrupt log once another replica leads.
func (p *partitionActor) unusable(ctx actor.Context) {
	p.reportOffline(ctx)
	p.repairCorrupt(ctx)
}

// unfit says why this replica cannot serve as an in-sync replica ("" when
// it can): it has no log, or its log lost records below the HW.
func (p *partitionActor) unfit() string {
	switch {
	case p.log == nil && p.openErr != nil:
		return p.openErr.Error()
	case p.log != nil && p.lostTo > p.log.LogEndOffset():
		return fmt.Sprintf("the log lost the records from %d up to its checkpointed high watermark %d", p.log.LogEndOffset(), p.lostTo)
	}
	return ""
}

// checkLostRecords ends the lost-records state once the log has them
// again, and reports the replica until then.
func (p *partitionActor) checkLostRecords(ctx actor.Context) {
	if leo := p.log.LogEndOffset(); leo >= p.lostTo {
		p.cfg.Logger.Info("the replica has the records it lost again", "partition", p.cfg.TP, "log_end_offset", leo)
		p.lostTo = 0
		return
	}
	p.reportOffline(ctx)
}

// reportOffline tells the controller this replica cannot serve, while the
// controller's state still counts on it (as leader or ISR member).
func (p *partitionActor) reportOffline(ctx actor.Context) {
	st, why, now := p.state, p.unfit(), time.Now()
	if why == "" || !replica.ReportOffline(p.cfg.BrokerID, st, p.lastOfflineReport, now) {
		return
	}
	p.lastOfflineReport = now
	p.cfg.Logger.Warn("reporting the replica offline to the controller", "partition", p.cfg.TP, "leader", st.Leader, "isr", st.Isr)
	ctx.Request(ctx.Parent(), &messages.ReplicaOfflineRequest{BrokerId: p.cfg.BrokerID, BrokerEpoch: p.cfg.Broker.BrokerEpoch,
		Topic: p.cfg.TP.Topic, Partition: p.cfg.TP.Partition, TopicId: p.cfg.TopicID, Reason: why})
}

// repairCorrupt moves a corrupt log aside and starts this replica over as
// an empty follower, once another replica leads without it in the ISR.
func (p *partitionActor) repairCorrupt(ctx actor.Context) {
	st := p.state
	if !p.corrupt || st == nil || st.Leader < 0 || st.Leader == p.cfg.BrokerID ||
		slices.Contains(st.Isr, p.cfg.BrokerID) || p.leaderAddr == "" {
		return
	}
	var aside string
	p.besideLog(ctx, func() (err error) {
		// The fresh log is the replica's at once: a stop before done
		// runs closes it.
		p.log, aside, err = p.moveAside()
		return err
	}, func(ctx actor.Context, err error) {
		if err != nil {
			p.cfg.Logger.Error("cannot repair a corrupt log", "partition", p.cfg.TP, "error", err)
			return
		}
		p.cfg.Logger.Warn("moved a corrupt log aside; refilling the replica from the leader", "partition", p.cfg.TP,
			"kept_at", aside, "leader", st.Leader, "was", p.openErr)
		p.openErr, p.corrupt, p.checkpointedHW, p.writtenHW = nil, false, 0, -1
		p.snapshotAt = -1
		p.acks.Reset(0)
		p.producers.Reset()
		p.lastRetention = time.Now()
		p.becomeFollower(ctx, p.leaderAddr)
		p.publishStatus()
	})
}

// moveAside moves the corrupt log aside (kept for the operator), with the
// files that described it, and opens a fresh, empty log. It runs beside
// the actor.
func (p *partitionActor) moveAside() (storage.Log, string, error) {
	aside, leftovers, err := p.dir().MoveLogAside(time.Now())
	if err != nil {
		return nil, "", err
	}
	for _, err := range leftovers {
		p.cfg.Logger.Warn("removing a file of a corrupt log", "partition", p.cfg.TP, "error", err)
	}
	l, err := p.openLog()
	if err != nil {
		return nil, "", fmt.Errorf("starting a fresh log after moving it aside to %s: %w", aside, err)
	}
	return l, aside, nil
}

// isCorrupt reports whether an open error is stored bytes failing a check
// (as opposed to an I/O error or a missing file).
func isCorrupt(err error) bool { return errors.Is(err, storage.ErrCorrupt) }
