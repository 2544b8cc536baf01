package tracing_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/tracing"
	"github.com/shardq/shardq/worker"
)

// TestTraceAcrossEnqueueAndWorker: a producer span and the consumer spans
// of a real worker share one trace through a real enqueue: each attempt's
// span is a child of the producer's, linked to it, with the task's
// attributes, and the failed attempt records its error.
func TestTraceAcrossEnqueueAndWorker(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	otel.SetTextMapPropagator(propagation.TraceContext{}) // for tracing.ContextHeaders

	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	cfg := queue.Config{Prefix: redistest.Prefix(t), ContextHeaders: tracing.ContextHeaders}
	client, err := queue.NewClient(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	insp, _ := queue.NewInspector(rdb, cfg)

	var runs atomic.Int64
	var sawHeader atomic.Value
	h := worker.HandlerFunc(func(ctx context.Context, task *worker.Task) error {
		sawHeader.Store(task.Headers["traceparent"])
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return worker.SkipRetry(errors.New("no span in the handler's context"))
		}
		if runs.Add(1) == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	w, err := worker.NewServer(rdb, worker.Config{Config: cfg, Queues: map[string]int{"mail": 1}, ForwardInterval: 20 * time.Millisecond,
		RetryDelay: func(int, error, *worker.Task) time.Duration { return 0 },
		Middleware: []worker.Middleware{tracing.Middleware(tracing.Options{TracerProvider: tp})}}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	}()

	pctx, producer := tp.Tracer("test").Start(ctx, "handle request", trace.WithSpanKind(trace.SpanKindServer))
	info, err := client.Enqueue(pctx, queue.NewRawTask("email:send", nil), queue.In("mail"), queue.Retention(time.Hour))
	producer.End()
	if err != nil {
		t.Fatal(err)
	}
	ti, err := insp.GetTask(ctx, "mail", info.ID)
	if err != nil || ti.Headers["traceparent"] == "" {
		t.Fatalf("GetTask shows headers %v, %v; want a traceparent", ti.Headers, err)
	}
	for end := time.Now().Add(15 * time.Second); runs.Load() < 2 || len(exp.GetSpans()) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d runs, %d spans", runs.Load(), len(exp.GetSpans()))
		}
	}
	if sawHeader.Load() != ti.Headers["traceparent"] {
		t.Fatalf("the handler saw traceparent %v, GetTask %v", sawHeader.Load(), ti.Headers["traceparent"])
	}
	psc := producer.SpanContext()
	var consumers []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindConsumer {
			consumers = append(consumers, s)
		}
	}
	if len(consumers) != 2 {
		t.Fatalf("%d consumer spans, want one per attempt (2)", len(consumers))
	}
	for i, s := range consumers {
		if s.SpanContext.TraceID() != psc.TraceID() || s.Parent.SpanID() != psc.SpanID() {
			t.Errorf("consumer span %d: trace %s parent %s, want trace %s parent %s", i, s.SpanContext.TraceID(), s.Parent.SpanID(), psc.TraceID(), psc.SpanID())
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != psc.SpanID() {
			t.Errorf("consumer span %d: links %v, want the producer span", i, s.Links)
		}
		if s.Name != "process mail" {
			t.Errorf("span name %q", s.Name)
		}
		want := map[attribute.Key]attribute.Value{
			"messaging.system":           attribute.StringValue("shardq"),
			"messaging.destination.name": attribute.StringValue("mail"),
			"messaging.message.id":       attribute.StringValue(info.ID),
			"shardq.task.type":           attribute.StringValue("email:send"),
			"shardq.task.attempt":        attribute.IntValue(i + 1),
		}
		got := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes {
			got[a.Key] = a.Value
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("consumer span %d: %s = %v, want %v", i, k, got[k].String(), v.String())
			}
		}
	}
	if consumers[0].Status.Code != codes.Error || len(consumers[0].Events) == 0 || consumers[1].Status.Code == codes.Error {
		t.Errorf("statuses %v / %v, events %d: want the failed attempt's error recorded, the second ok",
			consumers[0].Status, consumers[1].Status, len(consumers[0].Events))
	}
}

// TestNoTraceNoHeaders: without a span in the context nothing is added,
// so a task costs no byte more.
func TestNoTraceNoHeaders(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if h := tracing.ContextHeaders(context.Background()); h != nil {
		t.Fatalf("headers %v without a span", h)
	}
}

// TestMiddlewareOptions: Options.Propagator extracts the producer's
// context in place of the global propagator, and Options.TracerProvider
// makes the consumer span.
func TestMiddlewareOptions(t *testing.T) {
	global := otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTextMapPropagator(global) })
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) // extracts nothing

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, producer := tp.Tracer("test").Start(context.Background(), "enqueue")
	headers := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, headers)
	producer.End()

	mw := tracing.Middleware(tracing.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	h := mw(worker.HandlerFunc(func(context.Context, *worker.Task) error { return nil }))
	if err := h.ProcessTask(context.Background(), &worker.Task{ID: "t1", Type: "t", Queue: "q", Attempt: 1, Headers: headers}); err != nil {
		t.Fatal(err)
	}
	var consumer *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "process q" {
			consumer = &s
		}
	}
	if consumer == nil {
		t.Fatalf("no consumer span from Options.TracerProvider: %v", exp.GetSpans())
	}
	if consumer.Parent.TraceID() != producer.SpanContext().TraceID() || consumer.Parent.SpanID() != producer.SpanContext().SpanID() {
		t.Fatalf("consumer parent %v, want the producer's span %v: Options.Propagator not used", consumer.Parent, producer.SpanContext())
	}
}
