// Package metrics exposes shardq to Prometheus, with the ecosystem's own
// client library (github.com/prometheus/client_golang).
//
// NewQueueCollector reads queue state from Redis on every scrape: tasks per
// state, latency, paused, processed and failed totals, live workers, limit
// holders and waiters, and the autoscaling figure, in a bounded number of
// round trips per queue whatever the queue sizes. It exports the first
// 1,000 queues by name (QueueOptions.MaxQueues) and counts the rest in
// shardq_queues_dropped, so its series stay bounded however many queues
// producers create: 18 per queue, plus TopGroups' per queue, plus 3.
// Register it wherever /metrics is served: any process with a Redis
// client will do.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{}))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// NewWorkerMetrics is a worker.Observer with in-process metrics of the
// worker it is given to (worker.Config.Observer): handler durations by
// queue and task type, tasks in flight, runs by the state they left the
// task in (retries, dead), panics, lost leases and failed Redis calls. Its series grow with the queues the
// worker serves and the task types enqueued to them, handled or not.
//
// The shardq binary serves both: shardq worker --metrics-addr, and
// shardq dashboard at /metrics. docs/grafana and docs/prometheus hold a
// dashboard and alert rules built on these series.
package metrics
