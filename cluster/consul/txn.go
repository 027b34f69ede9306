package consul

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/consul/api"
	"github.com/sluicemq/sluice/cluster"
)

// consulMaxTxnOps is the most operations Consul 1.14 takes in one
// transaction (agent/txn_endpoint.go: maxTxnOps).
const consulMaxTxnOps = 128

// errNoFence: the Consul store writes only on behalf of a controller.
var errNoFence = fmt.Errorf("%w: a Consul metadata write needs the controller's fence (cluster.Leadership.Fence from Campaign)", cluster.ErrFenced)

// txn is a Consul transaction being built: its operations and, for each,
// the error to report when that operation is the one that failed.
type txn struct {
	ops    api.TxnOps
	fails  []func(what string) error // nil entries: a generic error
	checks int                       // ops[:checks] are the fence's checks
}

func (t *txn) add(op *api.KVTxnOp, fail func(what string) error) {
	t.ops = append(t.ops, &api.TxnOp{KV: op})
	t.fails = append(t.fails, fail)
}

// fencedTxn starts a write transaction whose first operations check that
// the store still holds this cluster's id (it was not wiped or replaced
// under the running cluster) and that the controller key is still held by
// f's session.
func (c *Backend) fencedTxn(f cluster.Fence) (*txn, error) {
	if f.Session == "" {
		return nil, errNoFence
	}
	bound := c.bound.Load()
	if bound == nil {
		return nil, fmt.Errorf("%w: this broker has not read the store's cluster id", cluster.ErrClusterIDChanged)
	}
	t := &txn{checks: 2}
	t.add(&api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.key(keyClusterID), Index: bound.index},
		func(string) error {
			return fmt.Errorf("%w: the key %s no longer holds cluster id %s", cluster.ErrClusterIDChanged, c.key(keyClusterID), bound.id)
		})
	t.add(&api.KVTxnOp{Verb: api.KVCheckSession, Key: c.key(keyController), Session: f.Session},
		func(string) error { return fmt.Errorf("%w (controller epoch %d)", cluster.ErrFenced, f.Epoch) })
	return t, nil
}

// commit runs t. When Consul rolls it back, the error is that of the failed
// operation; a failed fence check wins, since a deposed controller's other
// checks may fail for the same reason.
func (c *Backend) commit(ctx context.Context, t *txn) (*api.TxnResponse, error) {
	if len(t.ops) > consulMaxTxnOps {
		return nil, fmt.Errorf("consul transaction of %d operations: Consul takes at most %d", len(t.ops), consulMaxTxnOps)
	}
	cctx, cancel := c.call(ctx)
	defer cancel()
	ok, resp, _, err := c.client.Txn().Txn(t.ops, (&api.QueryOptions{}).WithContext(cctx))
	if err != nil {
		return nil, c.failed(ctx, fmt.Errorf("consul transaction: %w", err))
	}
	if ok {
		return resp, nil
	}
	var first *api.TxnError
	for _, e := range resp.Errors {
		if first == nil || e.OpIndex < first.OpIndex {
			first = e
		}
	}
	if first == nil || first.OpIndex < 0 || first.OpIndex >= len(t.ops) {
		return nil, errors.New("consul transaction rolled back without naming an operation")
	}
	if fail := t.fails[first.OpIndex]; fail != nil {
		return nil, fail(first.What)
	}
	return nil, fmt.Errorf("consul transaction operation %d failed: %s", first.OpIndex, first.What)
}
