package metrics

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// queueCollector is NewQueueCollector's collector.
type queueCollector struct {
	insp      *queue.Inspector
	timeout   time.Duration
	scaling   bool
	topGroups int
	maxQueues int // 0: every queue
	errors    atomic.Int64

	tasks, latency, paused, processed, failed, workers, running, ahead,
	limitHolders, limitWaiters, desired, activeGroups, groupBacklog, up, scrapeErrors, dropped *prometheus.Desc
}

// maxTopGroups bounds QueueOptions.TopGroups, so shardq_group_backlog's
// series stay few.
const maxTopGroups = 100

// defaultMaxQueues is how many queues the collector exports when
// QueueOptions.MaxQueues is 0.
const defaultMaxQueues = 1000

// QueueOptions sets NewQueueCollector's bounds. Its zero value is the
// defaults.
type QueueOptions struct {
	// MaxQueues is how many queues the collector exports: the first
	// MaxQueues by name. The queues beyond them are left out of every
	// series, and shardq_queues_dropped counts them: anyone who can
	// enqueue can create queues, and each costs the scrape its series and
	// Redis calls. Set it above the queues you expect, and alert on
	// shardq_queues_dropped. 0 is 1,000; a negative MaxQueues exports
	// every queue, with no bound.
	MaxQueues int
	// Timeout bounds each scrape's Redis reads. A scrape that runs out
	// reports shardq_up 0 and counts in shardq_scrape_errors_total. 0 is
	// 10s.
	Timeout time.Duration
	// TopGroups is how many groups per queue shardq_group_backlog reports,
	// the largest backlogs first. It bounds the metric's series to
	// TopGroups per queue, whatever the number of groups. 0 is 10, a
	// negative TopGroups leaves the metric out, and above 100 is 100.
	TopGroups int
	// NoScaling leaves out shardq_queue_desired_workers, which costs two
	// more round trips per queue.
	NoScaling bool
}

// NewQueueCollector returns a collector over the queues of insp's key
// prefix (its Config.Prefix), read from Redis at each scrape, with opts'
// bounds (QueueOptions{} for the defaults).
//
// Its series are bounded: at most 18 per queue, plus TopGroups'
// shardq_group_backlog series per queue (10 by default, at most 100), plus 3
// without labels. It exports the first 1,000 queues by name
// (QueueOptions.MaxQueues), so a scrape has at most 28,003 series by default,
// however many queues producers create; shardq_queues_dropped counts the
// queues left out. A scrape's Redis calls are bounded the same way.
func NewQueueCollector(insp *queue.Inspector, opts QueueOptions) prometheus.Collector {
	topGroups := min(cmp.Or(opts.TopGroups, 10), maxTopGroups)
	if topGroups < 0 {
		topGroups = 0 // the metric left out
	}
	maxQueues := cmp.Or(opts.MaxQueues, defaultMaxQueues)
	if maxQueues < 0 {
		maxQueues = 0 // every queue
	}
	q := []string{"queue"}
	c := &queueCollector{insp: insp, timeout: cmp.Or(opts.Timeout, 10*time.Second), scaling: !opts.NoScaling,
		topGroups: topGroups, maxQueues: maxQueues,
		tasks: prometheus.NewDesc("shardq_queue_tasks", "Tasks of the queue in each state (pending, active, scheduled, retry, dead, succeeded, waiting: held for their group).",
			[]string{"queue", "state"}, nil),
		latency: prometheus.NewDesc("shardq_queue_latency_seconds", "Age of the oldest pending task (0 when none is pending).", q, nil),
		paused:  prometheus.NewDesc("shardq_queue_paused", "1 while the queue is paused.", q, nil),
		processed: prometheus.NewDesc("shardq_tasks_processed_total", "Tasks processed since the queue began: succeeded plus failed attempts.",
			q, nil),
		failed:  prometheus.NewDesc("shardq_tasks_failed_total", "Attempts that failed since the queue began (retried or dead).", q, nil),
		workers: prometheus.NewDesc("shardq_workers", "Live worker processes serving the queue.", q, nil),
		running: prometheus.NewDesc("shardq_queue_running", "Handlers running the queue's tasks, summed over its live workers' last heartbeats.",
			q, nil),
		ahead: prometheus.NewDesc("shardq_queue_held_ahead",
			"Active tasks of the queue that its live workers leased ahead of their free slots (prefetch) and hold, not started, as of their last heartbeats.",
			q, nil),
		limitHolders: prometheus.NewDesc("shardq_limit_holders", "Tasks holding a slot of the queue's concurrency limit (its running tasks).", q, nil),
		limitWaiters: prometheus.NewDesc("shardq_limit_waiters", "Tasks held for their group: at its limits, or paused.", q, nil),
		activeGroups: prometheus.NewDesc("shardq_queue_groups", "Groups of the queue with tasks waiting.", q, nil),
		groupBacklog: prometheus.NewDesc("shardq_group_backlog", "Tasks waiting for one group, for the groups with the largest backlogs (QueueOptions.TopGroups).",
			[]string{"queue", "group"}, nil),
		desired: prometheus.NewDesc("shardq_queue_desired_workers", "Worker processes the queue needs now (queue.Inspector.Scaling; docs/autoscaling.md).",
			q, nil),
		up:           prometheus.NewDesc("shardq_up", "1 when the last scrape read Redis, else 0.", nil, nil),
		scrapeErrors: prometheus.NewDesc("shardq_scrape_errors_total", "Scrapes that failed to read Redis.", nil, nil),
		dropped: prometheus.NewDesc("shardq_queues_dropped", "Queues the last scrape left out of every series, beyond the first MaxQueues by name (QueueOptions).",
			nil, nil),
	}
	return c
}

// Describe sends every metric's description.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tasks, c.latency, c.paused, c.processed, c.failed, c.workers, c.running, c.ahead,
		c.limitHolders, c.limitWaiters, c.desired, c.activeGroups, c.groupBacklog, c.up, c.scrapeErrors, c.dropped} {
		ch <- d
	}
}

// Collect reads the queues and sends their metrics. A Redis failure sends
// shardq_up 0 and whatever was read before it.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	err := c.collect(ctx, ch)
	up := 1.0
	if err != nil {
		up = 0
		c.errors.Add(1)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.scrapeErrors, prometheus.CounterValue, float64(c.errors.Load()))
}

func (c *queueCollector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	infos, dropped, err := c.queues(ctx)
	if err != nil {
		return err
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.dropped, float64(dropped))
	live, err := inspect.LiveWork(ctx, c.insp)
	if err != nil {
		return err
	}
	for _, qi := range infos {
		q := qi.Queue
		for state, n := range map[string]int64{"pending": qi.Pending, "active": qi.Active, "scheduled": qi.Scheduled,
			"retry": qi.Retry, "dead": qi.Dead, "succeeded": qi.Succeeded, "waiting": qi.Waiting} {
			gauge(c.tasks, float64(n), q, state)
		}
		gauge(c.latency, qi.Latency.Seconds(), q)
		paused := 0.0
		if qi.Paused {
			paused = 1
		}
		gauge(c.paused, paused, q)
		ch <- prometheus.MustNewConstMetric(c.processed, prometheus.CounterValue, float64(qi.SucceededTotal+qi.FailedTotal), q)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(qi.FailedTotal), q)
		gauge(c.workers, float64(live[q].Workers), q)
		gauge(c.running, float64(live[q].Running), q)
		gauge(c.ahead, float64(live[q].Ahead), q)
		gauge(c.limitHolders, float64(qi.Active), q)
		gauge(c.limitWaiters, float64(qi.Waiting), q)
		gauge(c.activeGroups, float64(qi.ActiveGroups), q)
		if qi.ActiveGroups > 0 && c.topGroups > 0 {
			// one more round trip, only for a queue with groups waiting
			page, err := c.insp.Groups(ctx, queue.GroupQuery{Queue: q, Limit: c.topGroups})
			if err != nil {
				return err
			}
			for _, g := range page.Groups {
				gauge(c.groupBacklog, float64(g.Waiting), q, g.Group)
			}
		}
		if c.scaling {
			sc, err := c.insp.Scaling(ctx, queue.ScalingQuery{Queue: q})
			if err != nil {
				return err
			}
			gauge(c.desired, float64(sc.DesiredWorkers), q)
		}
	}
	return nil
}

// queues reads the queues to export, the first maxQueues by name, and
// how many were left out: every name, then the counts of those exported.
func (c *queueCollector) queues(ctx context.Context) ([]*queue.QueueInfo, int, error) {
	if c.maxQueues == 0 {
		infos, err := c.insp.QueueInfos(ctx)
		return infos, 0, err
	}
	names, err := c.insp.Queues(ctx) // sorted
	if err != nil || len(names) == 0 {
		return nil, 0, err
	}
	kept := names[:min(c.maxQueues, len(names))]
	infos, err := c.insp.QueueInfos(ctx, kept...)
	return infos, len(names) - len(kept), err
}
