package partition

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/replica"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/transport"
)

// Consumers' reads: fetches (answered at once or parked until data or
// their deadline) and offset lookups.

func (p *partitionActor) fetchError(req *messages.FetchRequest, code messages.ErrorCode, msg string) *messages.FetchResponse {
	resp := &messages.FetchResponse{Topic: req.Topic, Partition: req.Partition, Error: code, ErrorMessage: msg, HighWatermark: -1, LogStartOffset: -1}
	if p.log != nil {
		resp.LogStartOffset = p.log.LogStartOffset()
	}
	if p.leader != nil {
		resp.HighWatermark = p.leader.HighWatermark()
	}
	return resp
}

// checkEpoch fences requests that carry a leader epoch other than ours.
func (p *partitionActor) checkEpoch(epoch int32) (messages.ErrorCode, string) {
	return replica.CheckEpoch(epoch, p.leader.Epoch())
}

func (p *partitionActor) onFetch(ctx actor.Context, req *messages.FetchRequest) {
	sender := ctx.Sender()
	if code, msg := p.unavailable(); code != messages.ErrorCode_NONE {
		p.sendFetch(ctx, sender, req, p.fetchError(req, code, msg))
		return
	}
	if code, msg := p.checkEpoch(req.CurrentLeaderEpoch); code != messages.ErrorCode_NONE {
		p.sendFetch(ctx, sender, req, p.fetchError(req, code, msg))
		return
	}
	if code, msg := replica.CheckFetch(req, transport.FromNetwork(ctx)); code != messages.ErrorCode_NONE {
		p.sendFetch(ctx, sender, req, p.fetchError(req, code, msg))
		return
	}
	resp, ready := p.readFetch(req, req.MaxWaitMs == 0)
	if ready {
		p.sendFetch(ctx, sender, req, resp)
		return
	}
	p.nextFetchID++
	id := p.nextFetchID
	self, root := ctx.Self(), ctx.ActorSystem().Root
	wait := time.Duration(min(req.MaxWaitMs, p.cfg.Broker.MaxFetchWaitMs)) * time.Millisecond
	p.parked[id] = &parkedFetch{id: id, req: req, sender: sender,
		timer: time.AfterFunc(wait, func() { root.Send(self, fetchExpired{id}) })}
}

func (p *partitionActor) onFetchExpired(ctx actor.Context, id uint64) {
	f, ok := p.parked[id]
	if !ok {
		return
	}
	delete(p.parked, id)
	resp, _ := p.readFetch(f.req, true)
	p.sendFetch(ctx, f.sender, f.req, resp)
}

// sendFetch answers a consumer's fetch req, counted in the fetch metrics
// and in the records fetched the replica reports.
func (p *partitionActor) sendFetch(ctx actor.Context, sender *actor.PID, req *messages.FetchRequest, resp *messages.FetchResponse) {
	size := 0
	for _, b := range resp.Batches {
		size += len(b)
	}
	p.metrics.Fetched(size)
	if p.cfg.Fetched != nil && len(resp.Batches) > 0 {
		p.cfg.Fetched.Add(record.RecordsFrom(resp.Batches, req.Offset))
	}
	p.cfg.Broker.Metrics.RequestError("FetchRequest", resp.Error)
	actors.SendTo(ctx, sender, resp)
}

// readFetch reads for req what replica.PlanFetch says. ready is true when
// the response should go out now (replica.FetchReady; must: its wait is
// over).
func (p *partitionActor) readFetch(req *messages.FetchRequest, must bool) (*messages.FetchResponse, bool) {
	bounds := replica.LogBounds{Start: p.log.LogStartOffset(), End: p.log.LogEndOffset(), Durable: p.acks.Durable(),
		HW: p.leader.HighWatermark()}
	plan := replica.PlanFetch(req, bounds, p.cfg.Broker.MaxFetchBytes)
	if plan.Code != messages.ErrorCode_NONE {
		return p.fetchError(req, plan.Code, plan.Reason), true
	}
	resp := &messages.FetchResponse{Topic: req.Topic, Partition: req.Partition, HighWatermark: bounds.HW,
		LogStartOffset: bounds.Start, LeaderEpoch: p.leader.Epoch()}
	if !plan.Read {
		return resp, replica.FetchReady(req, plan, 0, must)
	}
	batches, err := p.log.Read(req.Offset, plan.MaxBytes, plan.Limit)
	if err != nil {
		code := messages.ErrorCode_STORAGE_ERROR
		if errors.Is(err, storage.ErrCorrupt) {
			code = messages.ErrorCode_CORRUPT_RECORD
		}
		p.cfg.Logger.Error("read failed", "partition", p.cfg.TP, "offset", req.Offset, "error", err)
		p.corruptRead(err)
		return p.fetchError(req, code, err.Error()), true
	}
	resp.Batches = batches
	size := 0
	for _, b := range batches {
		size += len(b)
	}
	return resp, replica.FetchReady(req, plan, size, must)
}

// corruptRead takes the log offline (from the actor's next message) when a
// read found stored bytes that fail their checks: this replica cannot serve.
func (p *partitionActor) corruptRead(err error) {
	if errors.Is(err, storage.ErrCorrupt) {
		p.root.Send(p.self, logFailed{gen: p.gen, err: err})
	}
}

// ---- list offsets ---------------------------------------------------------

func (p *partitionActor) onListOffsets(ctx actor.Context, req *messages.ListOffsetsRequest) {
	resp := &messages.ListOffsetsResponse{Topic: req.Topic, Partition: req.Partition, Offset: -1, Timestamp: -1}
	if code, msg := p.unavailable(); code != messages.ErrorCode_NONE {
		resp.Error, resp.ErrorMessage = code, msg
		actors.Respond(ctx, resp)
		return
	}
	if code, msg := p.checkEpoch(req.CurrentLeaderEpoch); code != messages.ErrorCode_NONE {
		resp.Error, resp.ErrorMessage = code, msg
		actors.Respond(ctx, resp)
		return
	}
	found := replica.ListOffset(req.Timestamp, p.log.LogStartOffset(), p.leader.HighWatermark(), p.leader.Epoch(), timeIndex{p.log})
	resp.Error, resp.ErrorMessage = found.Code, found.Reason
	resp.Offset, resp.Timestamp, resp.LeaderEpoch = found.Offset, found.Timestamp, found.LeaderEpoch
	actors.Respond(ctx, resp)
}

// timeIndex is what replica.ListOffset reads of the log.
type timeIndex struct{ storage.Log }

func (l timeIndex) EpochAt(offset int64) int32 {
	epoch, _ := storage.EpochAt(l.Epochs(), offset)
	return epoch
}
