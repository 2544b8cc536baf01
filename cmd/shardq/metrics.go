package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardq/shardq/metrics"
	"github.com/shardq/shardq/queue"
)

// metricsRegistry returns a registry with the queue collector over insp,
// the Go runtime's and the process's metrics.
func metricsRegistry(insp *queue.Inspector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{}), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveMetrics serves reg at http://addr/metrics until the returned stop
// is called.
func serveMetrics(addr string, reg *prometheus.Registry, out io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "metrics on http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
