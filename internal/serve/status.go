package serve

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/internal/wire"
)

// work counts one queue's finished handlers here, for the status each
// heartbeat publishes (wire.WorkerStatus): the workers page shows it, and
// the autoscaling figure (queue.Inspector.Scaling) takes the mean handler
// time from it. Handlers add with two atomic adds; only the heartbeat
// reads.
type work struct {
	done  atomic.Int64
	nanos atomic.Int64
	// the heartbeat goroutine's own
	lastDone, lastNanos int64
	meanMS              float64
}

// finished counts one handler that ran for d.
func (w *work) finished(d time.Duration) {
	w.done.Add(1)
	w.nanos.Add(int64(d))
}

// meanWeight is how much one heartbeat's mean moves the published mean:
// recent enough to follow a change in a minute or so, smooth enough not
// to jump with one slow task.
const meanWeight = 0.3

// sample folds the handlers finished since the last heartbeat into the
// mean and returns the queue's figures.
func (w *work) sample() wire.QueueWork {
	done, nanos := w.done.Load(), w.nanos.Load()
	if n := done - w.lastDone; n > 0 {
		ms := float64(nanos-w.lastNanos) / float64(n) / 1e6
		if w.meanMS == 0 {
			w.meanMS = ms
		} else {
			w.meanMS += meanWeight * (ms - w.meanMS)
		}
	}
	w.lastDone, w.lastNanos = done, nanos
	return wire.QueueWork{Done: done, MeanMS: w.meanMS}
}

// status is this worker's status as its heartbeat publishes it.
func (s *Engine) status() ([]byte, error) {
	host, _ := os.Hostname()
	st := wire.WorkerStatus{Host: host, PID: os.Getpid(), Started: s.started.UnixMilli(), Protocol: protocol.Current.String(),
		Queues: s.servedQueues(), Strict: s.cfg.StrictPriority, Concurrency: s.cfg.Concurrency}
	running := map[string]int{}
	for _, r := range s.running.snapshot() {
		running[r.p.queue]++
	}
	s.pmu.RLock()
	defer s.pmu.RUnlock()
	ahead := map[string]int{}
	aheadGroups := map[string]map[string]int{}
	for _, p := range s.parts {
		held := p.ahead.snapshot()
		ahead[p.queue] += len(held)
		countGroups(aheadGroups, p.queue, held)
	}
	st.Work = make(map[string]wire.QueueWork, len(s.work))
	for q, w := range s.work {
		qw := w.sample()
		qw.Running, qw.Ahead, qw.AheadGroups = running[q], ahead[q], aheadGroups[q]
		st.Work[q] = qw
	}
	return st.Encode()
}

// countGroups adds the groups of held, tasks of queue leased ahead, to
// into[queue]: the groups tab tells a group's running tasks from those
// waiting in a worker by it. It reads a message's group alone
// (wire.HeadKey), not its payload. A task whose message does not decode
// is counted in Ahead only; its handler will report it.
func countGroups(into map[string]map[string]int, queue string, held []leased) {
	for _, t := range held {
		g, ok := wire.HeadKey(t.msg)
		if !ok {
			var m wire.Message
			if wire.DecodeMessageString(t.msg, &m) != nil {
				continue
			}
			g = m.Key
		}
		if g == "" {
			continue
		}
		if into[queue] == nil {
			into[queue] = map[string]int{}
		}
		into[queue][g]++
	}
}

// publishStatus queues the write of this worker's status.
func (s *Engine) publishStatus(ctx context.Context, pipe redis.Pipeliner) {
	b, err := s.status()
	if err != nil {
		s.log.Warn("could not encode the worker status", "err", err)
		return
	}
	pipe.HSet(ctx, keys.WorkerStatus(s.cfg.Prefix), s.cfg.WorkerID, b)
}
