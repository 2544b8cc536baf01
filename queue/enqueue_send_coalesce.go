package queue

import (
	"context"
	"fmt"
	"runtime"

	"github.com/shardq/shardq/internal/coalesce"
)

// Concurrent single Enqueue calls share round trips, per partition, in
// the partition's line (internal/coalesce). Up to lineDepth calls of a
// client go out at once, each its own round trip, as without coalescing,
// and so does a call to a partition with no call in flight. A call that
// finds lineDepth in flight and one of its own partition among them waits
// in that partition's line; when a call of the partition returns, the
// calls in line go out together as one script call of many tasks
// (enqueue.lua, what EnqueueMany runs), sent by a goroutine of their own,
// which then takes whatever lined up meanwhile, until the line is empty.
// A producer that enqueues from one goroutine never finds a call in
// flight, so it pays nothing. Each caller still returns only once Redis
// has its task. Config.NoCoalescing turns this off.
//
// Why lineDepth is 8: a line only pays once its shared calls are large. A
// lined call waits for a call ahead, and a call of a few tasks costs
// Redis more than as many enqueue_one.lua calls, while Redis serves a few
// connections at once about as cheaply as one call. With 8, a few
// producers run as fast as without coalescing, and many run faster at
// less Redis CPU per task. With 4, a few producers ran slower. Why per
// client, not per partition: counted per partition, many calls to a
// queue of several partitions went out alone and the shared calls stayed
// small. BenchmarkEnqueue and bench --cluster measure both; the figures
// are in BENCHMARKS.md.

// line is one partition's line of waiting single enqueues: each carries
// its task (a copy: the caller's stays on its stack) and is told its info.
type line = coalesce.Line[pending, *TaskInfo]

// lineDepth is how many single enqueues of a client go out at once before
// the next waits in line (when its partition has one in flight).
const lineDepth = 8

// leave ends the caller's own call of pc: the calls that lined up
// meanwhile go out on a goroutine of their own, so the caller returns now.
func (c *Client) leave(pc *plainCall) {
	if ws, call := pc.line.TakeOrIdle(&c.inFlight); ws != nil {
		go c.sendLines(pc, ws, call)
	}
}

// sendLines sends the waiting calls, as one enqueue script call per turn,
// until the line is empty.
func (c *Client) sendLines(pc *plainCall, ws []*coalesce.Waiter[pending, *TaskInfo], call *coalesce.Call) {
	for ; ws != nil; ws, call = pc.line.TakeOrIdle(&c.inFlight) {
		c.sendLine(ws, call)
		// let the callers just told their outcome run first: most enqueue
		// again at once, and join the next call rather than the one after,
		// so shared calls grow larger (see BENCHMARKS.md)
		runtime.Gosched()
	}
}

// sendLine sends the tasks of ws in one script call and tells each its
// outcome. The call runs under its own context (coalesce.Call), which
// ends only when every caller in it has given up; one that gives up while
// the call runs has been told its outcome is unknown.
func (c *Client) sendLine(ws []*coalesce.Waiter[pending, *TaskInfo], call *coalesce.Call) {
	defer call.End()
	b := &batch{tasks: make([]pending, len(ws)), infos: make([]*TaskInfo, len(ws)), errs: make([]error, len(ws))}
	for i, w := range ws {
		b.tasks[i] = w.Item
		b.tasks[i].index = i
	}
	// the pipeline's route and admit are done: a plain task of a
	// partition whose route is known, and whose queue has no depth limit
	b.one = group{queue: b.tasks[0].info.Queue, partition: b.tasks[0].info.Partition, tasks: b.tasks}
	b.ones[0] = &b.one
	err := c.deliver(call.Ctx, b.ones[:], b)
	for i, w := range ws {
		if err != nil {
			w.Tell(nil, err)
		} else {
			w.Tell(b.infos[i], b.errs[i])
		}
	}
}

// await waits for w's outcome or for ctx to end. A caller that leaves
// before its task was taken into a shared call leaves nothing written;
// one that leaves after gets ctx's error too, but the call may still write
// its task.
func (c *Client) await(ctx context.Context, pc *plainCall, w *coalesce.Waiter[pending, *TaskInfo]) (*TaskInfo, error) {
	info, told, err := pc.line.Await(ctx, w)
	if !told {
		return nil, fmt.Errorf("enqueue %q: %w", w.Item.info.Queue, err)
	}
	return info, err
}
