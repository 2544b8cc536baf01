package main

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/doctor"
)

// doctorCollector exports the counts of shardq doctor's last audit as
// gauges: the dashboard audits in the background, every interval, so
// that a scrape reads the last report and never runs an audit itself (one
// audit reads every key of the prefix).
type doctorCollector struct {
	violations *prometheus.Desc
	lastRun    *prometheus.Desc
	took       *prometheus.Desc
	up         *prometheus.Desc

	mu   sync.Mutex
	rep  *doctor.Report // nil until the first audit ends
	at   time.Time      // when the last audit ended
	dur  time.Duration
	fail bool // the last audit failed; rep is the one before
}

func newDoctorCollector() *doctorCollector {
	return &doctorCollector{
		violations: prometheus.NewDesc("shardq_doctor_violations",
			"Violations of shardq's invariants that the last audit found, per check (shardq doctor).", []string{"check"}, nil),
		lastRun: prometheus.NewDesc("shardq_doctor_last_run_timestamp_seconds",
			"When the last audit ended, in Unix seconds.", nil, nil),
		took: prometheus.NewDesc("shardq_doctor_run_seconds",
			"How long the last audit took.", nil, nil),
		up: prometheus.NewDesc("shardq_doctor_up",
			"1 if the last audit read all it had to, 0 if it failed (the violations are then the audit's before).", nil, nil),
	}
}

// Describe sends the collector's descriptions.
func (c *doctorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.violations
	ch <- c.lastRun
	ch <- c.took
	ch <- c.up
}

// Collect sends the last audit's figures; nothing before the first one.
func (c *doctorCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return
	}
	up := 1.0
	if c.fail {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(c.at.UnixMilli())/1e3)
	ch <- prometheus.MustNewConstMetric(c.took, prometheus.GaugeValue, c.dur.Seconds())
	if c.rep == nil {
		return
	}
	counts := map[string]int{}
	for _, f := range c.rep.Findings {
		counts[f.Check] += f.Count
	}
	for _, chk := range doctor.Checks {
		ch <- prometheus.MustNewConstMetric(c.violations, prometheus.GaugeValue, float64(counts[chk.Name]), chk.Name)
	}
}

// audit runs one read-only audit and keeps its report.
func (c *doctorCollector) audit(ctx context.Context, rdb redis.UniversalClient, prefix string, log io.Writer) {
	began := time.Now()
	rep, err := doctor.Run(ctx, rdb, doctor.Options{Prefix: prefix})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.dur, c.fail = time.Now(), time.Since(began), err != nil
	if err != nil {
		if ctx.Err() == nil {
			_, _ = io.WriteString(log, "shardq dashboard: the background audit failed: "+err.Error()+"\n")
		}
		return
	}
	c.rep = rep
}

// run audits every interval until ctx ends, the first time at once.
func (c *doctorCollector) run(ctx context.Context, rdb redis.UniversalClient, prefix string, every time.Duration, log io.Writer) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c.audit(ctx, rdb, prefix, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
