package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/flow"
	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/wire"
)

// TaskFlow is the flow a task belongs to: a batch (BatchID) or a workflow
// (WorkflowID and the task's node name; a Chain's links are nodes "1" to
// "n"). A link of a chain that 0.1.0 enqueued has the chain's ID and its
// link's number here, though no workflow of that ID can be read.
type TaskFlow struct {
	BatchID    string
	WorkflowID string
	Node       string
}

// flowOf reads a message's flow ref; nil when it has none.
func flowOf(ref string) *TaskFlow {
	if ref == "" {
		return nil
	}
	r, err := wire.ParseFlowRef(ref)
	if err != nil {
		return nil
	}
	return taskFlowOf(r)
}

// taskFlowOf returns the TaskFlow of a parsed flow ref.
func taskFlowOf(r wire.FlowRef) *TaskFlow {
	switch r.Kind {
	case 'b':
		return &TaskFlow{BatchID: r.ID}
	case 'w':
		f := &TaskFlow{WorkflowID: keys.LongID(r.ID), Node: r.Node}
		if flow.IsBatchNode(r.Node) {
			f.BatchID = f.WorkflowID // a batch is a workflow of its shape
		}
		return f
	}
	return &TaskFlow{WorkflowID: r.ID, Node: strconv.Itoa(r.Link)} // a 0.1.0 chain
}

// BatchInfo is a batch's progress, as its home keeps it.
type BatchInfo struct {
	ID          string
	Description string
	// Parent is the batch this one is a member of; "" when none.
	Parent string
	// Total members, and how many are pending (not finished), succeeded
	// and dead. A dead member retried to success moves from Dead to
	// Succeeded.
	Total, Pending, Succeeded, Dead int
	Closed                          bool
	// Finished: closed and nothing pending; the callbacks went out.
	Finished bool
	// OnSuccess and OnComplete are the callbacks' task IDs ("" = none), and
	// when each was put out for delivery (zero = not yet).
	OnSuccess, OnComplete           string
	SuccessFiredAt, CompleteFiredAt time.Time
	// SuccessState and CompleteState say where each callback is: waiting
	// (not fired), enqueued, succeeded or dead ("" when there is none).
	SuccessState, CompleteState State
	CreatedAt, FinishedAt       time.Time
}

// GetBatch returns batch id's progress, in one round trip.
func (i *Inspector) GetBatch(ctx context.Context, id string) (*BatchInfo, error) {
	h := keys.Home(i.cfg.Prefix, keys.HomeOf(id))
	var vals []any
	var old map[string]string
	err := rcall.Do(ctx, i.rdb, func() error {
		var err error
		vals, err = i.rdb.HMGet(ctx, h.Workflow(id), flow.BatchFields...).Result()
		if err == nil && vals[0] == nil {
			// a batch 0.1.0 created keeps its own record
			old, err = i.rdb.HGetAll(ctx, h.Batch(id)).Result()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get batch %s: %w", id, err)
	}
	var r flow.BatchRead
	if old != nil {
		if len(old) == 0 {
			return nil, fmt.Errorf("batch %s: %w", id, errBatchNotFound)
		}
		r = flow.ReadOldBatch(old)
	} else {
		v := make([]string, len(vals))
		for j := range vals {
			v[j], _ = vals[j].(string)
		}
		var ok bool
		if r, ok = flow.ReadBatch(v); !ok {
			return nil, fmt.Errorf("batch %s: %w (a workflow)", id, errBatchNotFound)
		}
		r.Parent = keys.LongID(r.Parent)
	}
	b := &BatchInfo{
		ID: id, Description: r.Desc, Parent: r.Parent, Total: r.Total, Pending: r.Pending, Succeeded: r.Succeeded, Dead: r.Dead,
		Closed: r.Closed, Finished: r.Finished, CreatedAt: msTime(r.Created), FinishedAt: msTime(r.FinishedAt),
	}
	cbs := [2]struct {
		id    *string
		state *State
		fired *time.Time
	}{{&b.OnSuccess, &b.SuccessState, &b.SuccessFiredAt}, {&b.OnComplete, &b.CompleteState, &b.CompleteFiredAt}}
	for k, c := range r.Callbacks {
		if c.ID != "" {
			*cbs[k].id, *cbs[k].state, *cbs[k].fired = wire.PublicID(c.ID), nodeState(string(c.State)), msTime(c.Fired)
		}
	}
	return b, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// recentFlows returns up to limit of the newest chains, batches and
// workflows, newest first, in one round trip (one read per flow home,
// pipelined). Each home keeps its newest 1,000.
func (i *Inspector) recentFlows(ctx context.Context, limit int) ([]inspect.FlowSummary, error) {
	if limit <= 0 {
		return nil, nil
	}
	cmds := make([]*redis.ZSliceCmd, keys.FlowPartitions)
	err := rcall.Do(ctx, i.rdb, func() error {
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for n := range keys.FlowPartitions {
				cmds[n] = p.ZRevRangeWithScores(ctx, keys.Home(i.cfg.Prefix, n).Recent(), 0, int64(limit-1))
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recent flows: %w", err)
	}
	var out []inspect.FlowSummary
	for _, c := range cmds {
		for _, z := range c.Val() {
			m, _ := z.Member.(string)
			if len(m) < 3 {
				continue
			}
			kind := "batch"
			switch m[0] {
			case 'c':
				continue // a chain 0.1.0 enqueued: no page reads it
			case 'w':
				kind = "workflow"
			}
			out = append(out, inspect.FlowSummary{Kind: kind, ID: keys.LongID(m[2:]), CreatedAt: time.UnixMilli(int64(z.Score))})
		}
	}
	slices.SortStableFunc(out, func(a, b inspect.FlowSummary) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out[:min(len(out), limit)], nil
}

// forwardFlowsAfter forwards, after a deletion that succeeded (*err nil),
// the flow notifications of queue's partitions: a deleted flow task is
// dead to its flow (the delete scripts write that in T:notify), and the
// queue may have no worker to forward it. Failing here loses nothing: the
// notifications wait for the next forwarder.
func (i *Inspector) forwardFlowsAfter(ctx context.Context, queue string, err *error) {
	if *err != nil {
		return
	}
	env := &flow.Env{RDB: i.rdb, Prefix: i.cfg.Prefix, ShardSize: i.cfg.ShardSize, FeedSize: i.cfg.FeedSize, IDTTL: i.cfg.IDTTL}
	lists := make([]string, i.cfg.partitions(queue))
	for n := range lists {
		lists[n] = keys.For(i.cfg.Prefix, queue, n).Notify()
	}
	_ = rcall.Do(ctx, i.rdb, func() error {
		_, due, err := env.Forward(ctx, lists)
		if err == nil && len(due) > 0 {
			_, err = env.Deliver(ctx, due)
		}
		return err
	})
}
