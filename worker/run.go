package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/shardq/shardq/internal/serve"
)

// handle is the engine's Config.Handle: it runs the handler of job j, as
// a Task, and judges what its return leads to.
func (s *Server) handle(ctx context.Context, j *serve.Job, f serve.Fields) serve.Verdict {
	t := newTask(j, f)
	j.View = t // what TaskFromContext finds in ctx
	obs := s.cfg.Observer
	if obs == nil {
		// the engine times every run for its own figures; a second
		// clock is read only for an Observer
		return s.judge(ctx, t, s.handler.ProcessTask(ctx, t))
	}
	obs.HandlerStarted(t.Queue, t.Type)
	began := time.Now()
	err := s.handler.ProcessTask(ctx, t)
	took := time.Since(began)
	v := s.judge(ctx, t, err)
	var pe *PanicError
	obs.HandlerFinished(HandlerEvent{Queue: t.Queue, Type: t.Type, Duration: took, State: stateOf(v), Panicked: errors.As(err, &pe)})
	return v
}

// judge decides what a handler's return err leads to: an ack, a requeue
// when shutdown cut the run short, or a failure.
func (s *Server) judge(ctx context.Context, t *Task, err error) serve.Verdict {
	switch {
	case err == nil:
		return serve.Verdict{}
	case errors.Is(context.Cause(ctx), ErrShutdown):
		return serve.Verdict{Requeue: true}
	case errors.Is(context.Cause(ctx), ErrCancelled):
		return s.failure(t, SkipRetry(fmt.Errorf("%w: %w", ErrCancelled, err)))
	}
	var sn *snoozeError
	if s.cfg.ErrorHandler != nil && !errors.As(err, &sn) {
		s.cfg.ErrorHandler(ctx, t, err)
	}
	if errors.Is(err, ErrUnknownType) {
		s.warnUnhandled(t)
	}
	return s.failure(t, err)
}

// failure decides what a failed attempt leads to: a retry after a delay,
// or dead (Delay -1) when retries are spent or the handler said so.
func (s *Server) failure(t *Task, err error) serve.Verdict {
	v := serve.Verdict{Err: err, Delay: -1}
	var sn *snoozeError
	if errors.As(err, &sn) {
		v.Delay, v.Snooze = max(sn.delay, 0), true
		return v
	}
	if errors.Is(err, ErrSkipRetry) || t.RetriesLeft() == 0 {
		return v
	}
	var ri *retryInError
	if errors.As(err, &ri) {
		v.Delay = max(ri.delay, 0)
	} else {
		v.Delay = max(s.cfg.RetryDelay(t.Attempt, err, t), 0)
	}
	return v
}

// warnUnhandled logs, once per task type, that a task came with no
// handler for it: usually a producer deployed ahead of its workers. The
// task itself fails and retries like any other, so the handler can still
// arrive in time.
func (s *Server) warnUnhandled(t *Task) {
	if _, seen := s.unhandled.LoadOrStore(t.Type, true); seen {
		return
	}
	s.cfg.Logger.Warn("no handler for task type: its tasks fail and retry until one is registered (warned once per type)",
		"worker", s.cfg.WorkerID, "type", t.Type, "queue", t.Queue, "task", t.ID)
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
