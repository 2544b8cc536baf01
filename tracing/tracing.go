// Package tracing carries OpenTelemetry traces through shardq tasks, with
// the OpenTelemetry Go API (go.opentelemetry.io/otel).
//
// The producer side injects the caller's trace context into the task's
// headers; the worker side starts a consumer span for each run, a child of
// (and linked to) the producer's span, so one trace shows the request that
// enqueued a task and every attempt that ran it:
//
//	client, _ := queue.NewClient(rdb, queue.Config{ContextHeaders: tracing.ContextHeaders})
//	srv, _ := worker.NewServer(rdb, worker.Config{Middleware: []worker.Middleware{tracing.Middleware(tracing.Options{})}}, mux)
//
// Both use the global TracerProvider and TextMapPropagator unless
// Options say otherwise (otel.SetTracerProvider, otel.SetTextMapPropagator; the
// W3C traceparent propagator is the usual one).
package tracing

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardq/shardq/worker"
)

// instrumentation names the tracer, as OpenTelemetry asks of libraries.
const instrumentation = "github.com/shardq/shardq/tracing"

// ContextHeaders returns the headers that carry ctx's trace context, for
// queue.Config.ContextHeaders, or for one Enqueue call:
// client.Enqueue(ctx, task, queue.Headers(tracing.ContextHeaders(ctx))).
// It injects with the global propagator; with no span in ctx it returns
// none.
func ContextHeaders(ctx context.Context) map[string]string {
	return inject(ctx, otel.GetTextMapPropagator())
}

func inject(ctx context.Context, p propagation.TextMapPropagator) map[string]string {
	carrier := propagation.MapCarrier{}
	p.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	return carrier
}

// Options sets Middleware's tracer provider and propagator. Its zero value
// uses the global ones, as they are when each task runs.
type Options struct {
	// TracerProvider provides the consumer spans' tracer. Defaults to
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Propagator extracts the producer's context from a task's headers.
	// Defaults to otel.GetTextMapPropagator().
	Propagator propagation.TextMapPropagator
}

// Middleware returns a worker middleware that runs each handler in a
// consumer span named "process <queue>": a child of the producer's span
// when the task's headers carry one, and linked to it, with the task's
// ID, type, queue and attempt as attributes (OpenTelemetry's messaging
// conventions). A handler's error is recorded on the span and sets its
// status. Middleware(Options{}) uses the global tracer provider and
// propagator.
func Middleware(opts Options) worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, t *worker.Task) error {
			tp, prop := opts.TracerProvider, opts.Propagator
			if tp == nil {
				tp = otel.GetTracerProvider()
			}
			if prop == nil {
				prop = otel.GetTextMapPropagator()
			}
			parent := prop.Extract(ctx, propagation.MapCarrier(t.Headers))
			attrs := []attribute.KeyValue{
				attribute.String("messaging.system", "shardq"),
				attribute.String("messaging.operation.type", "process"),
				attribute.String("messaging.operation.name", "process"),
				attribute.String("messaging.destination.name", t.Queue),
				attribute.String("messaging.message.id", t.ID),
				attribute.String("shardq.task.type", t.Type),
				attribute.Int("shardq.task.attempt", t.Attempt),
				attribute.String("shardq.task.partition", strconv.Itoa(t.Partition)),
			}
			startOpts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
			if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
				startOpts = append(startOpts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			ctx, span := tp.Tracer(instrumentation).Start(parent, "process "+t.Queue, startOpts...)
			defer span.End()
			err := next.ProcessTask(ctx, t)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		})
	}
}
