package queue

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/lua"
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
	// expiry (at most 1000 per queue partition are read).
	Tasks []*TaskInfo
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
	var cmds []partCmd
	err = rcall.Do(ctx, i.rdb, func() error {
		cmds = cmds[:0]
		return lua.Pipelined(ctx, i.rdb, func(p *lua.Pipe) error {
			beats = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: keys.Workers(i.cfg.Prefix),
				Start: 0, Stop: maxWorkers - 1, Rev: true})
			for q, n := range reg {
				for part := range n {
					k := keys.For(i.cfg.Prefix, q, part)
					cmds = append(cmds, partCmd{q, part, p.Run(ctx, lua.ListZset,
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
		byID[w.ID] = w
		out = append(out, w)
	}
	var orphans []*WorkerInfo
	for _, c := range cmds {
		run, err := parseListed(TaskQuery{Queue: c.queue, State: StateActive}, c.part, c.cmd)
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
	sort.Slice(orphans, func(a, b int) bool { return orphans[a].ID < orphans[b].ID })
	return append(out, orphans...), nil
}
