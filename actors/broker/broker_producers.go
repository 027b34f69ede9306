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
	waiting    []idWaiter
	requesting bool
}

// idWaiter is an InitProducerId waiting for a block: who to answer, and
// the principal its id is bound to.
type idWaiter struct {
	sender    *actor.PID
	principal string
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
	if req.ProducerId > 0 && !b.ownsProducerID(ctx, req.ProducerId) {
		// Not the caller's id (or one issued before ids were bound): it
		// gets an id of its own rather than a new epoch of another's,
		// which would fence that producer.
		b.logRefusal("InitProducerId with a producer id issued to another principal; handing out a new one",
			"principal", transport.Principal(ctx), "peer", ctx.MessageHeader().Get(transport.PeerHeader), "producer_id", req.ProducerId)
		b.newProducerID(ctx)
		return
	}
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
		actors.Respond(ctx, b.issued(b.pids.next, transport.Principal(ctx)))
		b.pids.next++
		return
	}
	if sender := ctx.Sender(); sender != nil {
		b.pids.waiting = append(b.pids.waiting, idWaiter{sender, transport.Principal(ctx)})
	}
	b.requestProducerIDs(ctx)
}

// issued answers an InitProducerId with the block's number seq: on a
// broker with principals, as the id bound to principal (see
// acl.ProducerIDs), which no other principal can use or guess.
func (b *brokerActor) issued(seq int64, principal string) *messages.InitProducerIdResponse {
	if !b.cfg.Secure {
		return &messages.InitProducerIdResponse{ProducerId: seq}
	}
	id, err := b.cfg.ProducerIDs.Issue(seq, principal)
	if err != nil {
		return &messages.InitProducerIdResponse{Error: messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, ErrorMessage: err.Error(), ProducerId: -1}
	}
	return &messages.InitProducerIdResponse{ProducerId: id}
}

// ownsProducerID reports whether the sender may use producer id id: on a
// broker with principals only the principal it was issued to may (this
// process may use any).
func (b *brokerActor) ownsProducerID(ctx actor.Context, id int64) bool {
	p := transport.Principal(ctx)
	if !b.cfg.Secure || p == "" {
		return true
	}
	owns, _ := b.cfg.ProducerIDs.Owns(id, p)
	return owns
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
	for _, w := range waiting {
		if b.pids.next >= b.pids.end {
			b.pids.waiting = append(b.pids.waiting, w)
			continue
		}
		ctx.Send(w.sender, b.issued(b.pids.next, w.principal))
		b.pids.next++
	}
	if len(b.pids.waiting) > 0 {
		b.requestProducerIDs(ctx)
	}
}

// failProducerIDs answers every waiting InitProducerId with a retriable error.
func (b *brokerActor) failProducerIDs(ctx actor.Context, code messages.ErrorCode, text string) {
	for _, w := range b.pids.waiting {
		ctx.Send(w.sender, &messages.InitProducerIdResponse{Error: code, ErrorMessage: text, ProducerId: -1})
	}
	b.pids.waiting = nil
}
