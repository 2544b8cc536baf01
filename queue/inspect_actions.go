package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// ErrTaskState reports a task that is not in a state the action applies
// to (retrying a pending task, cancelling one that is not running), or
// that left it while the action ran.
var ErrTaskState = errors.New("queue: task is not in a state the action applies to")

// bulkBatch is how many tasks of a partition one script call of RunAllTasks
// or DeleteAllTasks handles.
const bulkBatch = 500

// action is an operator's change to tasks in given states: one script
// call per partition and batch.
type action struct {
	verb   string
	script *rcall.Script
	states []State
	keys   func(k keys.Partition) []string
	args   func(i *Inspector, k keys.Partition, tasks []*TaskInfo) []any
}

var runAction = &action{
	verb:   "run",
	script: script.RunTasks,
	states: []State{StateScheduled, StateRetry, StateDead},
	keys: func(k keys.Partition) []string {
		return []string{k.Scheduled(), k.Retry(), k.Dead(), k.Msg(), k.State(), k.First(), k.Last(), k.Feed(), k.FeedMsg(), k.Guard()}
	},
	args: func(i *Inspector, k keys.Partition, tasks []*TaskInfo) []any {
		args := []any{k.ShardPrefix(), i.cfg.ShardSize}
		for _, t := range tasks {
			args = append(args, wire.StoredID(t.ID), t.MaxRetry)
		}
		return args
	},
}

var deleteAction = &action{
	verb:   "delete",
	script: script.DeleteTasks,
	states: []State{StateScheduled, StateRetry, StateDead, StateSucceeded},
	keys: func(k keys.Partition) []string {
		return []string{k.Scheduled(), k.Retry(), k.Dead(), k.Done(), k.Msg(), k.State(), k.FeedMsg(), k.Expire()}
	},
	args: func(i *Inspector, k keys.Partition, tasks []*TaskInfo) []any {
		args := []any{k.T}
		for _, t := range tasks {
			args = append(args, wire.StoredID(t.ID), t.UniqueBy)
		}
		return args
	},
}

// RunTask moves a scheduled, retrying or dead task to the tail of its
// queue's pending list, so it runs now. A dead task gets one more
// attempt: it goes back to dead if that fails. Its attempts go on
// counting: the handler sees the next worker.Task.Attempt, not one it saw
// before. A task in another state is ErrTaskState; an unknown one
// ErrNotFound. Three round trips.
func (i *Inspector) RunTask(ctx context.Context, queue, id string) error {
	return i.actOne(ctx, runAction, queue, id)
}

// RunAllTasks runs every task of queue in state (StateScheduled,
// StateRetry or StateDead) now, as RunTask does, and returns how many it
// moved. It works in batches of bounded script calls (two round trips per
// batch of up to 500 tasks per partition) and stops after as many tasks
// as the state held when it began, so it ends while producers keep adding.
func (i *Inspector) RunAllTasks(ctx context.Context, queue string, state State) (int64, error) {
	return i.actAll(ctx, runAction, queue, state)
}

// DeleteTask deletes a pending, scheduled, retrying, dead or done task,
// releasing its uniqueness lock. An active task is ErrTaskState (cancel
// it instead).
//
// A pending task is an element of a list with no index by ID, so it is
// not searched for: its ID goes into a small set (T:tomb), it leaves the
// counts and listings at once, and the worker dequeue that reaches it
// drops it instead of running it. The cost is one EXISTS per dequeue call
// while no deletion waits, and one SREM per task popped while some do.
// BenchmarkProcess measured no cost on processing; see BENCHMARKS.md. A
// pending task is found by ID while it is in the queue's recent feed
// (Config.FeedSize per partition), as GetTask finds it.
func (i *Inspector) DeleteTask(ctx context.Context, queue, id string) (err error) {
	defer i.forwardFlowsAfter(ctx, queue, &err)
	ti, err := i.GetTask(ctx, queue, id)
	if err != nil {
		return err
	}
	if ti.State != StatePending {
		return i.actOne(ctx, deleteAction, queue, id)
	}
	k := keys.For(i.cfg.Prefix, queue, ti.Partition)
	var n int64
	err = rcall.Do(ctx, i.rdb, func() (err error) {
		n, err = script.TombPending.Run(ctx, i.rdb, []string{k.Tomb(), k.State(), k.Active(), k.FeedMsg()}, k.T, wire.StoredID(id)).Int64()
		return err
	})
	if err != nil {
		return fmt.Errorf("delete pending task %q of %q: %w", id, queue, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: delete task %q of %q: it is no longer pending", ErrTaskState, id, queue)
	}
	return nil
}

// DeleteAllTasks deletes every task of queue in state (StatePending,
// StateScheduled, StateRetry, StateDead or StateSucceeded) in batches, as
// RunAllTasks does, and returns how many it deleted.
//
// For StatePending it empties the backlog from the head, at most as many
// tasks as were pending when it began, so producers that keep enqueueing
// cannot keep it going; tasks a worker is taking at that moment, and tasks
// waiting for their group, still run. (DeleteTask deletes a
// single pending task.)
func (i *Inspector) DeleteAllTasks(ctx context.Context, queue string, state State) (_ int64, err error) {
	defer i.forwardFlowsAfter(ctx, queue, &err)
	if state == StatePending {
		return i.purgePending(ctx, queue)
	}
	return i.actAll(ctx, deleteAction, queue, state)
}

// purgePending deletes the pending tasks of queue, a batch per partition
// per round trip.
func (i *Inspector) purgePending(ctx context.Context, queue string) (int64, error) {
	qi, err := i.QueueInfo(ctx, queue)
	if err != nil {
		return 0, err
	}
	left := qi.Pending
	live := make([]int, qi.Partitions)
	for part := range live {
		live[part] = part
	}
	var total int64
	for left > 0 && len(live) > 0 {
		asks := purgeShares(left, len(live))
		cmds := make([]*redis.Cmd, len(live))
		err := rcall.Do(ctx, i.rdb, func() error {
			return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
				for j, part := range live {
					if asks[j] == 0 {
						continue
					}
					k := keys.For(i.cfg.Prefix, queue, part)
					cmds[j] = p.Run(ctx, script.PurgePending, []string{k.First(), k.Last(), k.Msg(), k.State(), k.FeedMsg(), k.Guard()}, k.T, asks[j])
				}
				return nil
			})
		})
		if err != nil {
			return total, fmt.Errorf("delete all pending tasks of %q: %w", queue, err)
		}
		still := live[:0]
		for j, c := range cmds {
			if c == nil {
				still = append(still, live[j]) // no share this round
				continue
			}
			got, err := c.Int64()
			if err != nil {
				return total, fmt.Errorf("delete all pending tasks of %q: %w", queue, err)
			}
			total, left = total+got, left-got
			if got == asks[j] {
				still = append(still, live[j])
			}
		}
		live = still
	}
	return total, nil
}

func (i *Inspector) actOne(ctx context.Context, a *action, queue, id string) error {
	ti, err := i.GetTask(ctx, queue, id)
	if err != nil {
		return err
	}
	if !slices.Contains(a.states, ti.State) {
		return fmt.Errorf("%w: %s task %q of %q is %s, want one of %v", ErrTaskState, a.verb, id, queue, ti.State, a.states)
	}
	k := keys.For(i.cfg.Prefix, queue, ti.Partition)
	var codes []int64
	err = rcall.Do(ctx, i.rdb, func() (err error) {
		codes, err = a.script.Run(ctx, i.rdb, a.keys(k), a.args(i, k, []*TaskInfo{ti})...).Int64Slice()
		return err
	})
	if err != nil {
		return fmt.Errorf("%s task %q of %q: %w", a.verb, id, queue, err)
	}
	if len(codes) != 1 || codes[0] != 1 {
		return fmt.Errorf("%w: %s task %q of %q: it left state %s meanwhile", ErrTaskState, a.verb, id, queue, ti.State)
	}
	return nil
}

func (i *Inspector) actAll(ctx context.Context, a *action, queue string, state State) (int64, error) {
	if err := taskState(a.verb+" all tasks", state); err != nil {
		return 0, err
	}
	if !slices.Contains(a.states, state) {
		return 0, fmt.Errorf("%w: %s all tasks in state %q, want one of %v", errInvalidOption, a.verb, state, a.states)
	}
	setKey, _ := stateSet(state)
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return 0, err
	}
	budget, err := i.setSizes(ctx, queue, n, setKey)
	if err != nil {
		return 0, fmt.Errorf("%s all %s tasks of %q: %w", a.verb, state, queue, err)
	}
	var total int64
	for slices.ContainsFunc(budget, func(n int64) bool { return n > 0 }) {
		batch, err := i.headOfSets(ctx, queue, state, setKey, budget)
		if err != nil || len(batch) == 0 {
			return total, err
		}
		done, err := i.apply(ctx, a, queue, batch)
		total += done
		if err != nil {
			return total, fmt.Errorf("%s all %s tasks of %q: %w", a.verb, state, queue, err)
		}
		for part, left := range budget {
			got := int64(len(batch[part]))
			if got < min(left, bulkBatch) {
				budget[part] = 0 // the set ran out
			} else {
				budget[part] -= got
			}
		}
	}
	return total, nil
}

// setSizes returns the size of one sorted set of every partition.
func (i *Inspector) setSizes(ctx context.Context, queue string, n int, setKey func(keys.Partition) string) ([]int64, error) {
	cmds := make([]*redis.IntCmd, n)
	err := i.perPartition(ctx, queue, n, func(p *rcall.Pipe, part int, k keys.Partition) {
		cmds[part] = p.ZCard(ctx, setKey(k))
	})
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for part, c := range cmds {
		out[part] = c.Val()
	}
	return out, nil
}

// headOfSets reads up to bulkBatch tasks from the head of the set of every
// partition with budget left, in one round trip: partition -> tasks.
func (i *Inspector) headOfSets(ctx context.Context, queue string, state State, setKey func(keys.Partition) string, budget []int64) (map[int][]*TaskInfo, error) {
	cmds := map[int]*redis.Cmd{}
	q := TaskQuery{Queue: queue, State: state}
	err := rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for part, left := range budget {
				if left > 0 {
					q.Limit = int(min(left, bulkBatch))
					cmds[part] = i.queueList(ctx, p, q, part, setKey, "")
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := map[int][]*TaskInfo{}
	for part, cmd := range cmds {
		run, err := parseReply(q, part, cmd)
		if err != nil {
			return nil, err
		}
		for _, l := range run {
			out[part] = append(out[part], l.task)
		}
	}
	return out, nil
}

// apply runs a's script on each partition's tasks in one round trip and
// returns how many it changed.
func (i *Inspector) apply(ctx context.Context, a *action, queue string, batch map[int][]*TaskInfo) (int64, error) {
	cmds := map[int]*redis.Cmd{}
	err := rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for part, tasks := range batch {
				k := keys.For(i.cfg.Prefix, queue, part)
				cmds[part] = p.Run(ctx, a.script, a.keys(k), a.args(i, k, tasks)...)
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, cmd := range cmds {
		codes, err := cmd.Int64Slice()
		if err != nil {
			return n, err
		}
		for _, c := range codes {
			n += c
		}
	}
	return n, nil
}

// purgeShares shares what a purge may still delete among n partitions, a
// batch at most each: a round never asks for more than left in all, as
// producers may be refilling the partitions.
func purgeShares(left int64, n int) []int64 {
	asks := make([]int64, n)
	for j := range asks {
		asks[j] = min(int64(bulkBatch), left/int64(n))
		if int64(j) < left%int64(n) && asks[j] < bulkBatch {
			asks[j]++
		}
	}
	return asks
}
