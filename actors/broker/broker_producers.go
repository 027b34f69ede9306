package broker

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// Producer ids: each broker hands out ids from a block the controller
// reserved for it in the metadata store, so ids never repeat in the cluster.

// producerIDBlock is how many ids a broker reserves at a time.
const producerIDBlock = 1000

// producerIDs is a broker's block of producer ids and the InitProducerId
// requests waiting for the next block.
type producerIDs struct {
	next, end  int64
	waiting    []*actor.PID
	requesting bool
}

// producerIDsRecorded is the data directory's answer to recording the end
// of a new block, which must be durable before any of its ids is used.
type producerIDsRecorded struct {
	first, count int64
	err          error
}

// onInitProducerID answers with the next epoch of the producer's id, or
// with a new id (see producerstate.InitProducer).
func (b *brokerActor) onInitProducerID(ctx actor.Context, req *messages.InitProducerIdRequest) {
	d, err := producerstate.InitProducer(req.ProducerId, req.ProducerEpoch)
	switch {
	case err != nil:
		actors.Respond(ctx, &messages.InitProducerIdResponse{Error: messages.ErrorCode_INVALID_REQUEST, ErrorMessage: err.Error(), ProducerId: -1})
	case !d.NewID:
		actors.Respond(ctx, &messages.InitProducerIdResponse{ProducerId: req.ProducerId, ProducerEpoch: int32(d.Epoch)})
	default:
		b.newProducerID(ctx)
	}
}

// newProducerID answers with the next id of this broker's block, once it has one.
func (b *brokerActor) newProducerID(ctx actor.Context) {
	if b.pids.next < b.pids.end {
		actors.Respond(ctx, &messages.InitProducerIdResponse{ProducerId: b.pids.next})
		b.pids.next++
		return
	}
	if sender := ctx.Sender(); sender != nil {
		b.pids.waiting = append(b.pids.waiting, sender)
	}
	b.requestProducerIDs(ctx)
}

// requestProducerIDs asks the controller for a block; the answer comes back
// to this actor.
func (b *brokerActor) requestProducerIDs(ctx actor.Context) {
	if b.pids.requesting {
		return
	}
	b.pids.requesting = true
	req := &messages.AllocateProducerIdsRequest{BrokerId: b.cfg.ID, Count: producerIDBlock, AtLeast: b.shared.pidsEnd.Load()}
	target := b.controller
	if target == nil {
		if id := b.controllerID(); id >= 0 {
			if br, ok := b.live[id]; ok {
				target = transport.ControllerPID(br.Addr)
			}
		}
	}
	if target == nil {
		b.pids.requesting = false
		b.failProducerIDs(ctx, messages.ErrorCode_NOT_CONTROLLER, "no controller is elected right now")
		return
	}
	reply.Ask(ctx, target, req, 10*time.Second, func(res any, err error) {
		resp, ok := res.(*messages.AllocateProducerIdsResponse)
		switch {
		case err != nil || !ok:
			b.pids.requesting = false
			b.failProducerIDs(ctx, messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, "producer id allocation failed")
		case resp.Error != messages.ErrorCode_NONE:
			b.pids.requesting = false
			b.failProducerIDs(ctx, resp.Error, resp.ErrorMessage)
		case resp.First < b.shared.pidsEnd.Load() || resp.Count <= 0:
			b.pids.requesting = false
			b.cfg.Logger.Error("refused a block of producer ids this broker may have handed out before: the metadata store's counter went back",
				"first", resp.First, "count", resp.Count, "recorded_end", b.shared.pidsEnd.Load())
			b.failProducerIDs(ctx, messages.ErrorCode_INCONSISTENT_CLUSTER_ID,
				fmt.Sprintf("the controller handed out producer ids from %d, below %d, the end of a block this broker had", resp.First, b.shared.pidsEnd.Load()))
		default:
			b.recordProducerIDs(ctx, resp.First, int64(resp.Count))
		}
	})
}

// recordProducerIDs makes the end of a new block durable in the data
// directory, beside the actor, before any of its ids is handed out.
func (b *brokerActor) recordProducerIDs(ctx actor.Context, first, count int64) {
	dir, self, root := b.cfg.Dir, ctx.Self(), ctx.ActorSystem().Root
	if dir == nil {
		b.onProducerIDsRecorded(ctx, &producerIDsRecorded{first: first, count: count})
		return
	}
	go func() {
		err := dir.RecordProducerIDsEnd(first + count)
		root.Send(self, &producerIDsRecorded{first: first, count: count, err: err})
	}()
}

func (b *brokerActor) onProducerIDsRecorded(ctx actor.Context, msg *producerIDsRecorded) {
	b.pids.requesting = false
	if msg.err != nil {
		b.cfg.Logger.Error("cannot record the producer id block in the data directory", "error", msg.err)
		b.failProducerIDs(ctx, messages.ErrorCode_STORAGE_ERROR, "cannot record the producer id block: "+msg.err.Error())
		return
	}
	b.pids.next, b.pids.end = msg.first, msg.first+msg.count
	if b.pids.end > b.shared.pidsEnd.Load() {
		b.shared.pidsEnd.Store(b.pids.end)
	}
	waiting := b.pids.waiting
	b.pids.waiting = nil
	for _, pid := range waiting {
		if b.pids.next >= b.pids.end {
			b.pids.waiting = append(b.pids.waiting, pid)
			continue
		}
		ctx.Send(pid, &messages.InitProducerIdResponse{ProducerId: b.pids.next})
		b.pids.next++
	}
	if len(b.pids.waiting) > 0 {
		b.requestProducerIDs(ctx)
	}
}

// failProducerIDs answers every waiting InitProducerId with a retriable error.
func (b *brokerActor) failProducerIDs(ctx actor.Context, code messages.ErrorCode, text string) {
	for _, pid := range b.pids.waiting {
		ctx.Send(pid, &messages.InitProducerIdResponse{Error: code, ErrorMessage: text, ProducerId: -1})
	}
	b.pids.waiting = nil
}
