package queue

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// maxWorkers bounds how many worker processes Workers reads, and
// maxWorkerTasks how many active tasks of each queue partition.
const (
	maxWorkers     = 1000
	maxWorkerTasks = 1000
)

// WorkerInfo describes a worker process as its heartbeats and the active
// tasks' records show it.
type WorkerInfo struct {
	ID string
	// LastHeartbeat is the worker's last heartbeat, by the Redis server's
	// clock; zero for a worker that holds tasks but has no heartbeat (it
	// crashed: the reaper gives its tasks back when their leases expire).
	LastHeartbeat time.Time
	// Tasks are the active tasks this worker leases, in order of lease
	// expiry (at most 1000 per queue partition are read): those running,
	// and those it leased ahead of its free slots (Ahead).
	Tasks []*TaskInfo

	// What the worker published with its last heartbeat; zero for a
	// worker too old to publish it, or one that crashed.
	Host        string
	PID         int
	Started     time.Time
	Queues      map[string]int // queue -> weight
	Strict      bool           // StrictPriority: weights are priorities
	Concurrency int            // handler slots
	// Busy is how many of its slots run a handler: its leased tasks
	// (Tasks), at most Concurrency of them.
	Busy int
	// Ahead is how many of its leased tasks wait in it for a slot: leased
	// ahead of its free slots (prefetch: a busy worker with quick handlers
	// leases up to its Config.Prefetch ahead), active in Redis but not
	// started. Busy + Ahead = len(Tasks).
	Ahead int
	// Work is the worker's work per queue it serves.
	Work map[string]WorkerQueue
}

// WorkerQueue is one worker's work on one of its queues.
type WorkerQueue struct {
	Running int // handlers running at the last heartbeat
	// Ahead is how many tasks leased ahead it held at the last heartbeat
	// (see WorkerInfo.Ahead).
	Ahead int
	// AheadGroups counts, of Ahead, the tasks of each group (Group).
	AheadGroups map[string]int
	Finished    int64 // handlers finished since the worker started
	// MeanHandlerTime is the recent mean time a handler ran (a weighted
	// mean over heartbeats); 0 before the first finished.
	MeanHandlerTime time.Duration
}

// setStatus fills in what the worker published.
func (w *WorkerInfo) setStatus(st *wire.WorkerStatus) {
	w.Host, w.PID, w.Queues, w.Strict, w.Concurrency = st.Host, st.PID, st.Queues, st.Strict, st.Concurrency
	if st.Started > 0 {
		w.Started = time.UnixMilli(st.Started)
	}
	w.Work = make(map[string]WorkerQueue, len(st.Work))
	for q, qw := range st.Work {
		w.Work[q] = WorkerQueue{Running: qw.Running, Ahead: qw.Ahead, AheadGroups: qw.AheadGroups, Finished: qw.Done,
			MeanHandlerTime: time.Duration(qw.MeanMS * float64(time.Millisecond))}
	}
}

// Workers returns the worker processes with a heartbeat, newest first
// (at most 1000), and what each runs, in one round trip after the registry
// read: the workers set and one script call per queue partition.
func (i *Inspector) Workers(ctx context.Context) ([]*WorkerInfo, error) {
	reg, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	type partCmd struct {
		queue string
		part  int
		cmd   *redis.Cmd
	}
	var beats *redis.ZSliceCmd
	var statuses *redis.MapStringStringCmd
	var cmds []partCmd
	err = rcall.Do(ctx, i.rdb, func() error {
		cmds = cmds[:0]
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			beats = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: keys.Workers(i.cfg.Prefix),
				Start: 0, Stop: maxWorkers - 1, Rev: true})
			statuses = p.HGetAll(ctx, keys.WorkerStatus(i.cfg.Prefix))
			for q, n := range reg {
				for part := range n.Serve {
					k := keys.For(i.cfg.Prefix, q, part)
					cmds = append(cmds, partCmd{q, part, p.Run(ctx, script.ListZset,
						[]string{k.Active(), k.Msg(), k.State(), k.FeedMsg()}, "", "", maxWorkerTasks, "asc")})
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read workers: %w", err)
	}
	var out []*WorkerInfo
	byID := map[string]*WorkerInfo{}
	for _, z := range beats.Val() {
		w := &WorkerInfo{ID: fmt.Sprint(z.Member), LastHeartbeat: time.UnixMilli(int64(z.Score))}
		if b, ok := statuses.Val()[w.ID]; ok {
			if st, err := wire.DecodeWorkerStatus([]byte(b)); err == nil {
				w.setStatus(st)
			}
		}
		byID[w.ID] = w
		out = append(out, w)
	}
	var orphans []*WorkerInfo
	for _, c := range cmds {
		run, err := parseListed(TaskQuery{Queue: c.queue, State: StateActive}, c.part, c.cmd, i.opener())
		if err != nil {
			return nil, fmt.Errorf("read active tasks of %q: %w", c.queue, err)
		}
		for _, l := range run {
			w := byID[l.task.Worker]
			if w == nil {
				w = &WorkerInfo{ID: l.task.Worker}
				byID[w.ID] = w
				orphans = append(orphans, w)
			}
			w.Tasks = append(w.Tasks, l.task)
		}
	}
	for _, w := range byID {
		// no more handlers run than the slots: a task leased past them
		// waits ahead (a worker with no status: all taken as running)
		w.Busy = len(w.Tasks)
		if w.Concurrency > 0 {
			w.Busy = min(w.Busy, w.Concurrency)
		}
		w.Ahead = len(w.Tasks) - w.Busy
	}
	sort.Slice(orphans, func(a, b int) bool { return orphans[a].ID < orphans[b].ID })
	return append(out, orphans...), nil
}

// liveWindow is how recent a heartbeat must be for its worker to count as
// live: twice the default lease. A worker that died stays in the
// heartbeat set until another worker reaps it; with none left, nobody
// does, and this window is what drops it.
const liveWindow = time.Minute

// alive reports whether a heartbeat (score: server ms) is within liveWindow.
func alive(z redis.Z) bool {
	return time.Since(time.UnixMilli(int64(z.Score))) < liveWindow
}

// liveWork returns, per queue, the live workers serving it and what they
// run, from the statuses their heartbeats publish, in one round trip. A
// worker too old to publish a status is not counted.
func (i *Inspector) liveWork(ctx context.Context) (map[string]inspect.QueueWork, error) {
	live, err := i.liveStatuses(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]inspect.QueueWork{}
	for _, st := range live {
		for q := range st.Queues {
			out[q] = out[q].Add(st.Work[q])
		}
	}
	return out, nil
}

// liveStatuses returns the statuses of the workers with a heartbeat (at
// most maxWorkers), by worker ID.
func (i *Inspector) liveStatuses(ctx context.Context) (map[string]*wire.WorkerStatus, error) {
	var beats []redis.Z
	var statuses map[string]string
	err := rcall.Do(ctx, i.rdb, func() error {
		var b *redis.ZSliceCmd
		var s *redis.MapStringStringCmd
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			b = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: keys.Workers(i.cfg.Prefix), Start: 0, Stop: maxWorkers - 1, Rev: true})
			s = p.HGetAll(ctx, keys.WorkerStatus(i.cfg.Prefix))
			return nil
		})
		beats, statuses = b.Val(), s.Val()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read workers: %w", err)
	}
	out := make(map[string]*wire.WorkerStatus, len(beats))
	for _, z := range beats {
		if !alive(z) {
			continue
		}
		id := fmt.Sprint(z.Member)
		if st, err := wire.DecodeWorkerStatus([]byte(statuses[id])); err == nil && statuses[id] != "" {
			out[id] = st
		}
	}
	return out, nil
}
