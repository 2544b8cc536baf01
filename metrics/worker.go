package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardq/shardq/worker"
)

// workerMetrics is NewWorkerMetrics's observer.
type workerMetrics struct {
	duration  *prometheus.HistogramVec
	inFlight  *prometheus.GaugeVec
	runs      *prometheus.CounterVec
	panics    *prometheus.CounterVec
	leaseLost *prometheus.CounterVec
	redisErrs *prometheus.CounterVec
}

// NewWorkerMetrics returns a worker.Observer that keeps in-process
// Prometheus metrics, registered with reg, of the worker it is given to
// (worker.Config.Observer). Its series are per queue the worker serves
// and per task type enqueued to those queues, a type without a handler
// included: the producers of those queues choose how many.
func NewWorkerMetrics(reg prometheus.Registerer) worker.Observer {
	m := &workerMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardq_handler_duration_seconds",
			Help:    "Time a handler ran, by queue and task type.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"queue", "type"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardq_tasks_in_flight", Help: "Handlers running in this process, by queue.",
		}, []string{"queue"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardq_handler_runs_total",
			Help: "Handler runs in this process by queue, task type and the state they left the task in (succeeded, retry, dead, scheduled after a Snooze, pending after a shutdown).",
		}, []string{"queue", "type", "state"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardq_handler_panics_total", Help: "Handlers that panicked in this process, by queue and task type.",
		}, []string{"queue", "type"}),
		leaseLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardq_lease_lost_total", Help: "Running tasks whose lease this process lost (it stalled past it), by queue.",
		}, []string{"queue"}),
		redisErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardq_redis_errors_total", Help: "Redis calls of this worker that failed (and were retried), by step.",
		}, []string{"step"}),
	}
	reg.MustRegister(m.duration, m.inFlight, m.runs, m.panics, m.leaseLost, m.redisErrs)
	return m
}

// HandlerStarted counts a handler in flight.
func (m *workerMetrics) HandlerStarted(queue, _ string) { m.inFlight.WithLabelValues(queue).Inc() }

// HandlerFinished records a handler's run.
func (m *workerMetrics) HandlerFinished(e worker.HandlerEvent) {
	m.inFlight.WithLabelValues(e.Queue).Dec()
	m.duration.WithLabelValues(e.Queue, e.Type).Observe(e.Duration.Seconds())
	m.runs.WithLabelValues(e.Queue, e.Type, string(e.State)).Inc()
	if e.Panicked {
		m.panics.WithLabelValues(e.Queue, e.Type).Inc()
	}
}

// LeaseLost counts a lost lease.
func (m *workerMetrics) LeaseLost(queue string) { m.leaseLost.WithLabelValues(queue).Inc() }

// RedisError counts a failed Redis call.
func (m *workerMetrics) RedisError(step string) { m.redisErrs.WithLabelValues(step).Inc() }
