package serve

import (
	"context"
	"errors"
	"fmt"
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
// cause, answering ViewKey without a context.WithValue of its own.
type running struct {
	context.Context
	p      *part
	job    *Job
	cancel context.CancelCauseFunc
	// own holds the job of a task run here: one allocation for both
	own Job
}

// ViewKey is the context key under which a handler's context holds its
// job's View: worker.TaskFromContext reads it.
type ViewKey struct{}

// Value returns the running job's View for ViewKey and its batch or
// workflow for home.MemberKey, else the embedded context's value.
func (r *running) Value(key any) any {
	switch key {
	case ViewKey{}:
		return r.job.View
	case home.MemberKey{}:
		// a batch is a workflow: its ID (one 0.1.0 created too)
		if id, _ := r.job.Workflow(); id != "" {
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
func (s *Engine) start(p *part, tasks []leased) {
	if len(tasks) == 0 {
		return
	}
	s.tasks.Add(len(tasks))
	s.runners.add(p, tasks)
}

func (s *Engine) runJob(j job) {
	defer s.tasks.Done()
	defer s.slots.Release(1)
	s.run(j.p, j.l)
}

// run executes one task and puts its outcome in the outbox.
func (s *Engine) run(p *part, l leased) {
	r := &running{p: p}
	j := &r.own
	f, err := s.decode(j, p, l)
	if err != nil {
		s.warnUndecodable(p, l, err)
		s.finish(undecodable(p, l, err))
		return
	}
	dead := s.cfg.Causes.Dead
	// Attempt-1-Granted > MaxRetry, not Attempt > MaxRetry+1+Granted:
	// MaxRetry may be math.MaxInt ("retry forever"), and the sum would
	// overflow
	if f.Attempt-1-f.Granted > f.MaxRetry {
		s.finish(s.outcomeOf(p, j, Verdict{Delay: -1, Err: dead(fmt.Errorf("attempts exhausted: attempt %d of %d; earlier attempts lost their lease (worker crashed or stalled)",
			f.Attempt, uint64(f.MaxRetry)+1+uint64(f.Granted)))}))
		return
	}
	if !f.Deadline.IsZero() && !time.Now().Before(f.Deadline) {
		s.finish(s.outcomeOf(p, j, Verdict{Delay: -1, Err: dead(fmt.Errorf("deadline %v passed before attempt %d started", f.Deadline, f.Attempt))}))
		return
	}
	// Not derived from s.handlerCtx: a child of a shared context costs an
	// insert and a delete in its children map, an interface-keyed map
	// whose cost showed in a worker's CPU (see BENCHMARKS.md). stopTasks
	// cancels through the registry instead.
	base, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r.Context, r.job, r.cancel = base, j, cancel
	var ctx context.Context = r
	if !f.Deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, f.Deadline)
		defer stop()
	}
	s.running.add(r)
	if cause := context.Cause(s.handlerCtx); cause != nil {
		cancel(cause) // stopTasks ran before this task joined the registry
	}
	began := time.Now()
	v := s.cfg.Handle(ctx, j, f)
	p.work.finished(time.Since(began))
	s.running.remove(r)
	if !v.Requeue && v.Err == nil {
		s.probe.BeforeAck()
	}
	s.finish(s.outcomeOf(p, j, v))
}

// Verdict is what an attempt leads to, as package worker judged its
// handler's return: an ack (Err nil), a failure to retry after Delay or,
// with Delay negative, to send to dead, a Snooze, or a requeue.
type Verdict struct {
	// Requeue: shutdown cut the run short; the task goes back to the
	// head of its queue without costing an attempt.
	Requeue bool
	// Err is why the attempt failed; nil for a success.
	Err error
	// Delay is the wait before the task runs again; negative: dead.
	Delay time.Duration
	// Snooze: back after Delay, the attempt not counted, no error kept.
	Snooze bool
}

// outcomeOf is the outcome that writes verdict v of job j.
func (s *Engine) outcomeOf(p *part, j *Job, v Verdict) outcome {
	switch {
	case v.Requeue:
		return outcome{p: p, id: j.sid, token: j.token, kind: outcomeRequeue}
	case v.Err == nil:
		o := outcome{p: p, id: j.sid, token: j.token, kind: outcomeAck, retentionMS: j.retention.Milliseconds(), unique: j.unique, flow: j.flow}
		o.workflow, o.node = s.flowTarget(j.flow)
		return o
	}
	o := outcome{p: p, id: j.sid, token: j.token, kind: outcomeFail, err: v.Err.Error(), delayMS: codes.None, flow: j.flow}
	if s.cfg.EncryptErrors {
		if sealed, werr := s.codec.WrapString(o.err, j.sid, envelope.Error); werr == nil {
			o.err = sealed
		} else {
			o.err = "the error could not be encrypted: " + werr.Error()
		}
	}
	if v.Delay >= 0 {
		o.delayMS = v.Delay.Milliseconds()
	}
	if v.Snooze {
		o.snooze = 1
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
func (s *Engine) warnUndecodable(p *part, l leased, err error) {
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

// decode decodes leased task l of partition p into j and the fields it
// returns: its message, its payload opened (decrypted, decompressed) and
// checked.
func (s *Engine) decode(j *Job, p *part, l leased) (Fields, error) {
	var m wire.Message
	if err := wire.DecodeMessageString(l.msg, &m); err != nil {
		return Fields{}, fmt.Errorf("undecodable task message: %w", err)
	}
	if envelope.Wrapped(m.Payload) || s.codec.Ring != nil {
		// with a ring, a plain payload is refused too (AllowPlaintext)
		p, err := s.codec.Open(m.Payload, l.id, envelope.Payload, s.cfg.MaxPayloadSize)
		if err != nil {
			return Fields{}, fmt.Errorf("payload of task %s does not open: %w", wire.PublicID(l.id), err)
		}
		m.Payload = p
	}
	if !m.Raw && len(m.Payload) > 0 {
		// Checked once here, so that no decode of it can end the process:
		// Task.Decode's, Typed's, nor a handler's own msgpack.Unmarshal of
		// Payload. A timestamp the decoder could misread comes rewritten.
		p, err := wire.Normalize(m.Payload)
		if err != nil {
			return Fields{}, fmt.Errorf("payload of task %s: %w", wire.PublicID(l.id), err) // "malformed msgpack: ..."
		}
		m.Payload = p
	}
	*j = Job{sid: l.id, e: s, p: p, token: l.token, retention: time.Duration(m.Retention) * time.Millisecond, unique: m.Unique, flow: m.Flow}
	f := Fields{ID: wire.PublicID(l.id), Type: m.Type, Queue: p.queue, Partition: p.index, Payload: m.Payload, Raw: m.Raw,
		Attempt: l.attempt, MaxRetry: m.MaxRetry, EnqueuedAt: time.UnixMilli(m.EnqueuedAt), StartedAt: time.UnixMilli(l.at),
		Headers: m.Headers, Granted: l.granted}
	if m.Timeout > 0 {
		f.Deadline = time.Now().Add(time.Duration(m.Timeout) * time.Millisecond)
	}
	if m.Deadline > 0 {
		if d := time.UnixMilli(m.Deadline); f.Deadline.IsZero() || d.Before(f.Deadline) {
			f.Deadline = d
		}
	}
	return f, nil
}
