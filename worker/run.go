package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/wire"
)

// running is one handler at work, for lease extension and cancellation.
// It is also the handler's context: the embedded one, cancelled with the
// cause, answering TaskFrom without a context.WithValue of its own.
type running struct {
	context.Context
	p      *part
	task   *Task
	cancel context.CancelCauseFunc
}

// Value returns the running task for taskKey and its batch or workflow
// for home.MemberKey, else the embedded context's value.
func (r *running) Value(key any) any {
	switch key {
	case taskKey{}:
		return r.task
	case home.MemberKey{}:
		// a batch is a workflow: its ID (one 0.1.0 created too)
		if id, _ := r.task.Workflow(); id != "" {
			return id
		}
		return nil
	}
	return r.Context.Value(key)
}

// registry is the set of handlers running now.
type registry struct {
	mu  sync.Mutex
	all map[*running]struct{}
}

func (r *registry) add(x *running) {
	r.mu.Lock()
	r.all[x] = struct{}{}
	r.mu.Unlock()
}

func (r *registry) remove(x *running) {
	r.mu.Lock()
	delete(r.all, x)
	r.mu.Unlock()
}

// has reports whether x still runs.
func (r *registry) has(x *running) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.all[x]
	return ok
}

func (r *registry) snapshot() []*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*running, 0, len(r.all))
	for x := range r.all {
		out = append(out, x)
	}
	return out
}

// start runs each leased task on a runner goroutine; each holds one slot.
func (s *Server) start(p *part, tasks []leased) {
	if len(tasks) == 0 {
		return
	}
	s.tasks.Add(len(tasks))
	s.runners.add(p, tasks)
}

func (s *Server) runJob(j job) {
	defer s.tasks.Done()
	defer s.slots.Release(1)
	s.run(j.p, j.l)
}

// run executes one task and puts its outcome in the outbox.
func (s *Server) run(p *part, l leased) {
	t, err := s.newTask(p, l)
	if err != nil {
		s.warnUndecodable(p, l, err)
		s.finish(undecodable(p, l, err))
		return
	}
	// Attempt-1-granted > MaxRetry, not Attempt > MaxRetry+1+granted:
	// MaxRetry may be math.MaxInt ("retry forever"), and the sum would
	// overflow
	if t.Attempt-1-t.granted > t.MaxRetry {
		s.finish(s.failure(p, t, SkipRetry(fmt.Errorf("attempts exhausted: attempt %d of %d; earlier attempts lost their lease (worker crashed or stalled)",
			t.Attempt, uint64(t.MaxRetry)+1+uint64(t.granted)))))
		return
	}
	if !t.Deadline.IsZero() && !time.Now().Before(t.Deadline) {
		s.finish(s.failure(p, t, SkipRetry(fmt.Errorf("deadline %v passed before attempt %d started", t.Deadline, t.Attempt))))
		return
	}
	// Not derived from s.handlerCtx: a child of a shared context costs an
	// insert and a delete in its children map, an interface-keyed map
	// whose cost showed in a worker's CPU (see BENCHMARKS.md). stopTasks
	// cancels through the registry instead.
	base, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r := &running{Context: base, p: p, task: t, cancel: cancel}
	var ctx context.Context = r
	if !t.Deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, t.Deadline)
		defer stop()
	}
	s.running.add(r)
	if cause := context.Cause(s.handlerCtx); cause != nil {
		cancel(cause) // stopTasks ran before this task joined the registry
	}
	obs := s.cfg.Observer
	if obs != nil {
		obs.HandlerStarted(t.Queue, t.Type)
	}
	began := time.Now()
	err = s.handler.ProcessTask(ctx, t)
	took := time.Since(began)
	p.work.finished(took)
	s.running.remove(r)

	var o outcome
	switch {
	case err == nil:
		s.probe.beforeAck()
		o = outcome{p: p, id: t.sid, token: t.token, kind: outcomeAck, retentionMS: t.retention.Milliseconds(), unique: t.unique, flow: t.flow}
		o.workflow, o.node = s.flowTarget(t.flow)
	case errors.Is(context.Cause(ctx), ErrShutdown):
		o = outcome{p: p, id: t.sid, token: t.token, kind: outcomeRequeue}
	case errors.Is(context.Cause(ctx), ErrCancelled):
		o = s.failure(p, t, SkipRetry(fmt.Errorf("%w: %w", ErrCancelled, err)))
	default:
		var sn *snoozeError
		if s.cfg.ErrorHandler != nil && !errors.As(err, &sn) {
			s.cfg.ErrorHandler(ctx, t, err)
		}
		if errors.Is(err, ErrUnknownType) {
			s.warnUnhandled(t)
		}
		o = s.failure(p, t, err)
	}
	if obs != nil {
		var pe *PanicError
		obs.HandlerFinished(HandlerEvent{Queue: t.Queue, Type: t.Type, Duration: took, State: stateOf(o), Panicked: errors.As(err, &pe)})
	}
	s.finish(o)
}

// warnUnhandled logs, once per task type, that a task came with no
// handler for it: usually a producer deployed ahead of its workers. The
// task itself fails and retries like any other, so the handler can still
// arrive in time.
func (s *Server) warnUnhandled(t *Task) {
	if _, seen := s.unhandled.LoadOrStore(t.Type, true); seen {
		return
	}
	s.log.Warn("no handler for task type: its tasks fail and retry until one is registered (warned once per type)",
		"type", t.Type, "queue", t.Queue, "task", t.ID)
}

// recovering turns a panic of h into a returned *PanicError. The server
// wraps the handler in it inside the middleware, so a logging or metrics
// middleware sees the failure as any other instead of being unwound past,
// and the whole chain once more, for panics of middleware itself.
func recovering(h Handler) Handler {
	return HandlerFunc(func(ctx context.Context, t *Task) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Value: v, Stack: string(debug.Stack())}
			}
		}()
		return h.ProcessTask(ctx, t)
	})
}

// failure decides what a failed attempt leads to: a retry after a delay,
// or dead (delay -1) when retries are spent or the handler said so.
func (s *Server) failure(p *part, t *Task, err error) outcome {
	o := outcome{p: p, id: t.sid, token: t.token, kind: outcomeFail, err: err.Error(), delayMS: codes.None, flow: t.flow}
	if s.cfg.EncryptErrors {
		if sealed, werr := s.codec.WrapString(o.err, t.sid, envelope.Error); werr == nil {
			o.err = sealed
		} else {
			o.err = "the error could not be encrypted: " + werr.Error()
		}
	}
	var sn *snoozeError
	if errors.As(err, &sn) {
		o.delayMS, o.snooze = max(sn.delay, 0).Milliseconds(), 1
		return o
	}
	if errors.Is(err, ErrSkipRetry) || t.RetriesLeft() == 0 {
		return o
	}
	var ri *retryInError
	if errors.As(err, &ri) {
		o.delayMS = max(ri.delay, 0).Milliseconds()
	} else {
		o.delayMS = max(s.cfg.RetryDelay(t.Attempt, err, t), 0).Milliseconds()
	}
	return o
}

// dictRetry is how long a task waits whose compression dictionary could
// not be read (Redis failed) before it is tried again.
const dictRetry = 5 * time.Second

// undecodable is the outcome of a leased task that newTask could not
// make. A message or payload that does not decode can never run: dead,
// with why; its bytes stay, to run again once fixed (a key added to the
// ring, a dictionary put back). One whose dictionary could not be read
// now is retried.
func undecodable(p *part, l leased, err error) outcome {
	o := outcome{p: p, id: l.id, token: l.token, kind: outcomeFail, delayMS: codes.None, err: err.Error()}
	if errors.Is(err, envelope.ErrDictUnavailable) {
		o.delayMS = dictRetry.Milliseconds()
	}
	return o
}

// warnUndecodable logs a task that newTask could not make, which
// undecodable sends to dead or retries: 40 tasks whose key the ring
// lacked once went to dead with nothing logged. The log's throttle
// bounds a flood of them.
func (s *Server) warnUndecodable(p *part, l leased, err error) {
	var m wire.Message
	_ = wire.DecodeMessageString(l.msg, &m) // for its type and key, when it decodes
	attrs := []any{"task", wire.PublicID(l.id), "queue", p.queue, "type", m.Type}
	switch {
	case errors.Is(err, envelope.ErrUnknownKey):
		if s.codec.Ring == nil {
			s.log.Warn("a task's payload is encrypted, and this worker has no key ring: the task goes to dead; "+
				"give the worker the producers' ring (Config.KeyRing) and run it again",
				append(attrs, "key", envelope.KeyID(m.Payload))...)
			return
		}
		s.log.Warn("a task's payload is encrypted with a key this worker's ring lacks: the task goes to dead; "+
			"add the key to the ring and run it again",
			append(attrs, "key", envelope.KeyID(m.Payload), "ring", strings.Join(s.codec.Ring.IDs(), ","))...)
	case errors.Is(err, envelope.ErrDictUnavailable):
		s.log.Warn("a task's compression dictionary could not be read: the task is retried", append(attrs, "err", err)...)
	default:
		s.log.Warn("a task cannot be decoded: it goes to dead with why", append(attrs, "err", err)...)
	}
}

func (s *Server) newTask(p *part, l leased) (*Task, error) {
	var m wire.Message
	if err := wire.DecodeMessageString(l.msg, &m); err != nil {
		return nil, fmt.Errorf("undecodable task message: %w", err)
	}
	if envelope.Wrapped(m.Payload) || s.codec.Ring != nil {
		// with a ring, a plain payload is refused too (AllowPlaintext)
		p, err := s.codec.Open(m.Payload, l.id, envelope.Payload, s.cfg.MaxPayloadSize)
		if err != nil {
			return nil, fmt.Errorf("payload of task %s does not open: %w", wire.PublicID(l.id), err)
		}
		m.Payload = p
	}
	if !m.Raw && len(m.Payload) > 0 {
		// Checked once here, so that no decode of it can end the process:
		// Task.Decode's, Typed's, nor a handler's own msgpack.Unmarshal of
		// Payload. A timestamp the decoder could misread comes rewritten.
		p, err := wire.Normalize(m.Payload)
		if err != nil {
			return nil, fmt.Errorf("payload of task %s: %w", wire.PublicID(l.id), err) // "malformed msgpack: ..."
		}
		m.Payload = p
	}
	t := &Task{
		ID: wire.PublicID(l.id), sid: l.id, srv: s, part: p, Type: m.Type, Headers: m.Headers, Queue: p.queue, Partition: p.index, Payload: m.Payload, Raw: m.Raw,
		Attempt: l.attempt, MaxRetry: m.MaxRetry, EnqueuedAt: time.UnixMilli(m.EnqueuedAt), StartedAt: time.UnixMilli(l.at),
		token: l.token, granted: l.granted, retention: time.Duration(m.Retention) * time.Millisecond, unique: m.Unique, flow: m.Flow,
	}
	if m.Timeout > 0 {
		t.Deadline = time.Now().Add(time.Duration(m.Timeout) * time.Millisecond)
	}
	if m.Deadline > 0 {
		if d := time.UnixMilli(m.Deadline); t.Deadline.IsZero() || d.Before(t.Deadline) {
			t.Deadline = d
		}
	}
	return t, nil
}
