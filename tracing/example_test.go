package tracing_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/tracing"
	"github.com/shardq/shardq/worker"
)

func ExampleMiddleware() {
	url, stop := exampleRedisURL()
	defer stop()
	ctx := context.Background()
	rdb, err := queue.NewRedisClient(url)
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()

	// at start-up: a tracer provider (here, one that keeps spans in memory)
	// and the W3C traceparent propagator
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)
	otel.SetTextMapPropagator(propagation.TraceContext{})

	// the worker runs each task in a consumer span, a child of the producer's
	ran := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("email:send", func(ctx context.Context, t *worker.Task) error {
		close(ran)
		return nil
	})
	server, err := worker.NewServer(rdb, worker.Config{
		Middleware: []worker.Middleware{tracing.Middleware(tracing.Options{TracerProvider: tp})},
	}, mux)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		log.Fatal(err)
	}

	// the producer puts the caller's trace context in each task's headers
	client, err := queue.NewClient(rdb, queue.Config{ContextHeaders: tracing.ContextHeaders})
	if err != nil {
		log.Fatal(err)
	}
	reqCtx, request := tp.Tracer("web").Start(ctx, "POST /signup")
	_, err = client.Enqueue(reqCtx, queue.NewRawTask("email:send", nil))
	request.End()
	if err != nil {
		log.Fatal(err)
	}
	<-ran
	if err := server.Shutdown(ctx); err != nil { // the handler's span has ended
		log.Fatal(err)
	}

	var lines []string
	for _, s := range spans.GetSpans() {
		lines = append(lines, fmt.Sprintf("%s (%s), in the request's trace: %t",
			s.Name, s.SpanKind, s.SpanContext.TraceID() == request.SpanContext().TraceID()))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// POST /signup (internal), in the request's trace: true
	// process default (consumer), in the request's trace: true
}
