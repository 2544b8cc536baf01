package worker

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardq/shardq/internal/serve"
)

// Handler runs tasks. Returning nil acknowledges the task; an error fails
// the attempt (see SkipRetry, RetryIn and Snooze). The context ends at the
// task's timeout or deadline, when its lease is lost (ErrLeaseLost), when
// shutdown runs out of time (ErrShutdown), when an operator cancels the
// task (ErrCancelled, noticed at the next heartbeat) or when a Semaphore
// middleware loses its slot (ErrLeaseLost too, wrapped by a message that
// names the semaphore); context.Cause tells which.
type Handler interface {
	ProcessTask(ctx context.Context, t *Task) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, t *Task) error

// ProcessTask calls f.
func (f HandlerFunc) ProcessTask(ctx context.Context, t *Task) error { return f(ctx, t) }

// Middleware wraps a Handler (logging, metrics, tracing, limits). A panic
// of the handler reaches the middleware as a returned *PanicError.
type Middleware func(Handler) Handler

// Mux routes tasks to handlers by type. It is safe for concurrent use.
type Mux struct {
	mu       sync.RWMutex
	handlers map[string]Handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[string]Handler{}} }

// Handle registers h for tasks of type typ, replacing any earlier one.
func (m *Mux) Handle(typ string, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers[typ] = h
}

// HandleFunc registers f for tasks of type typ.
func (m *Mux) HandleFunc(typ string, f func(ctx context.Context, t *Task) error) {
	m.Handle(typ, HandlerFunc(f))
}

// ProcessTask runs the handler of t's type, or fails with ErrUnknownType.
// A context that carries no task gets t, so a handler that a unit test
// calls through the Mux finds its task (TaskFromContext, Step).
func (m *Mux) ProcessTask(ctx context.Context, t *Task) error {
	if _, ok := TaskFromContext(ctx); !ok {
		ctx = context.WithValue(ctx, serve.ViewKey{}, t)
	}
	m.mu.RLock()
	h := m.handlers[t.Type]
	m.mu.RUnlock()
	if h == nil {
		return fmt.Errorf("%w %q (task %s)", ErrUnknownType, t.Type, t.ID)
	}
	return h.ProcessTask(ctx, t)
}

// Typed returns a Handler that decodes the payload into a T (msgpack, or
// JSON for a raw payload: see Task.Decode) and calls f with it. A payload
// that does not decode into T, or fits none of its fields
// (queue.ErrPayloadMismatch), can never succeed: the task goes to dead at
// once, f never called.
func Typed[T any](f func(ctx context.Context, t *Task, payload T) error) Handler {
	return HandlerFunc(func(ctx context.Context, t *Task) error {
		var p T
		if err := t.Decode(&p); err != nil {
			return SkipRetry(err)
		}
		return f(ctx, t, p)
	})
}

// chain applies middleware so the first listed runs outermost.
func chain(h Handler, mw []Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}
