package queue

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Concurrent single Enqueue calls share round trips, per partition. Up to
// lineDepth calls of a client go out at once, each its own round trip, as
// without coalescing, and so does a call to a partition with no call in
// flight. A call that finds lineDepth in flight and one of its own
// partition among them waits in that partition's line; when a call of the
// partition returns, the calls in line go out together as one batch
// script call (enqueue.lua, what EnqueueMany runs), sent by a goroutine
// of their own, which then takes whatever lined up meanwhile, until the
// line is empty. Nobody waits for more than a call ahead and its own: no
// timer holds a call back to gather a batch, and a line always has a call
// of its partition in flight to end its wait. A producer that enqueues
// from one goroutine never finds a call in flight, so it pays nothing.
// Each caller still returns only once Redis has its task.
// Config.NoCoalescing turns this off.
//
// Why lineDepth is 8: a line only pays once its batches are large. A
// lined call waits for a call ahead, and a small batch costs Redis more
// than as many enqueue_one.lua calls, while Redis serves a few
// connections at once about as cheaply as one batch. With 8, a few
// producers run as fast as without coalescing, and many run faster at
// less Redis CPU per task. With 4, a few producers ran slower. Why per
// client, not per partition: counted per partition, many calls to a
// queue of several partitions went out alone and the batches stayed
// small. BenchmarkEnqueue and bench --cluster measure both; the figures
// are in BENCHMARKS.md.

// line is one partition's line of waiting single enqueues.
type line struct {
	mu       sync.Mutex
	inFlight int       // calls of the partition in flight
	waiting  []*waiter // calls to send when one returns
}

// lineDepth is how many single enqueues of a client go out at once before
// the next waits in line (when its partition has one in flight).
const lineDepth = 8

// waiter is one Enqueue call in line: its task, and once sent, its outcome.
type waiter struct {
	task pending // a copy: the caller's stays on its stack
	// ctx is the caller's: the batch call carries the values (a trace
	// span, for one) of its first caller's, not its deadline
	ctx context.Context
	// taken is set, under the line's lock, when the task goes into batch:
	// from then on the caller may leave but not take the task back
	taken bool
	batch *batchCall
	done  chan struct{} // closed when info and err are set
	info  *TaskInfo
	err   error
}

// batchCall is the call of one batch of waiters. Its context ends when
// every one of them has left: a batch is bounded by its callers'
// contexts, as a call of one caller is bounded by that caller's.
type batchCall struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiting atomic.Int32 // callers still waiting for the outcome
}

// leave counts a caller out, and ends the call when none is left.
func (b *batchCall) leave() {
	if b.waiting.Add(-1) == 0 {
		b.cancel()
	}
}

// join returns nil and counts the caller's call in flight, in the line and
// in all (the client's count), when the partition has none in flight or
// fewer than depth are in flight in all: the caller sends its task itself
// and then calls leave. Otherwise it puts a copy of p in line and returns
// its waiter.
func (l *line) join(ctx context.Context, p *pending, depth int64, all *atomic.Int64) *waiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == 0 || all.Load() < depth {
		l.inFlight++
		all.Add(1)
		return nil
	}
	w := &waiter{task: *p, ctx: ctx, done: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	return w
}

// takeOrIdle returns the calls in line, marked taken, to go out in the
// place of a call that returned, or counts that call out and returns nil
// when there are none.
func (l *line) takeOrIdle(all *atomic.Int64) []*waiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := l.waiting
	if len(ws) == 0 {
		l.inFlight--
		all.Add(-1)
		return nil
	}
	l.waiting = nil
	b := &batchCall{}
	// a context of its own, not any caller's: one caller giving up must
	// not decide the others' outcome. It keeps the first caller's values,
	// so the call's span (a go-redis tracing hook's) has that caller's
	// for a parent, not none.
	b.ctx, b.cancel = context.WithCancel(context.WithoutCancel(ws[0].ctx))
	b.waiting.Store(int32(len(ws)))
	for _, w := range ws {
		w.taken, w.batch = true, b
	}
	return ws
}

// drop takes w out of line unless its task was taken into a batch; it
// reports whether it did (nothing of w's was written, nor will be).
func (l *line) drop(w *waiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.taken {
		return false
	}
	for i, o := range l.waiting {
		if o == w {
			l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
			break
		}
	}
	return true
}

// leave ends the caller's own call of pc: the calls that lined up
// meanwhile go out on a goroutine of their own, so the caller returns now.
func (c *Client) leave(pc *plainCall) {
	if ws := pc.line.takeOrIdle(&c.inFlight); ws != nil {
		go c.sendLines(pc, ws)
	}
}

// sendLines sends batches of waiting calls until the line is empty.
func (c *Client) sendLines(pc *plainCall, ws []*waiter) {
	for ; ws != nil; ws = pc.line.takeOrIdle(&c.inFlight) {
		c.sendLine(ws)
		// let the callers just told their outcome run first: most enqueue
		// again at once, and join the next batch rather than the one after,
		// so batches grow larger (see BENCHMARKS.md)
		runtime.Gosched()
	}
}

// sendLine sends the tasks of ws in one batch call and tells each its
// outcome. The call runs under the batch's context (batchCall), which ends
// only when every caller in it has given up; one that gives up while the
// call runs has been told its outcome is unknown.
func (c *Client) sendLine(ws []*waiter) {
	call := ws[0].batch
	defer call.cancel()
	b := &batch{tasks: make([]pending, len(ws)), infos: make([]*TaskInfo, len(ws)), errs: make([]error, len(ws))}
	for i, w := range ws {
		b.tasks[i] = w.task
		b.tasks[i].index = i
	}
	// the pipeline's route and admit are done: a plain task of a
	// partition whose route is known, and whose queue has no depth limit
	b.one = group{queue: b.tasks[0].info.Queue, partition: b.tasks[0].info.Partition, tasks: b.tasks}
	b.ones[0] = &b.one
	err := c.deliver(call.ctx, b.ones[:], b)
	for i, w := range ws {
		if err != nil {
			w.err = err
		} else {
			w.info, w.err = b.infos[i], b.errs[i]
		}
		close(w.done)
	}
}

// await waits for w's outcome or for ctx to end. A caller that leaves
// before its task was taken into a batch leaves nothing written; one that
// leaves after gets ctx's error too, but the batch may still write its
// task, and reads its message (and once every caller of the batch has
// left, the batch's call ends too).
func (c *Client) await(ctx context.Context, pc *plainCall, w *waiter) (*TaskInfo, error) {
	select {
	case <-w.done:
		return w.info, w.err
	case <-ctx.Done():
	}
	select {
	case <-w.done: // both ready: the outcome is known, say it
		return w.info, w.err
	default:
	}
	err := fmt.Errorf("enqueue %q: %w", w.task.info.Queue, ctx.Err())
	if !pc.line.drop(w) {
		w.batch.leave()
	}
	return nil, err
}
