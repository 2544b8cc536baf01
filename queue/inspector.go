package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/logging"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// Inspector reads queues and tasks for dashboards and tools. Every method
// costs a bounded number of Redis calls, whatever the size of the queues.
type Inspector struct {
	rdb   redis.UniversalClient
	cfg   Config
	codec *envelope.Codec // opens compressed and encrypted values
}

// NewInspector returns an Inspector over rdb.
func NewInspector(rdb redis.UniversalClient, cfg Config) (*Inspector, error) {
	if rcall.IsNil(rdb) {
		return nil, fmt.Errorf("%w: nil Redis client", errInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logging.RouteRedis()
	codec := cfg.codec()
	codec.Dicts = envelope.RedisDicts(rdb, cfg.Prefix)
	return &Inspector{rdb: rdb, cfg: cfg, codec: codec}, nil
}

// QueueInfo is the size of every state of a queue, summed over its partitions.
type QueueInfo struct {
	Queue string
	// Partitions counts the partitions workers serve and the counts sum
	// over, and Draining those of them that producers no longer route to:
	// Inspector.SetPartitions lowered the count and they still hold tasks.
	Partitions int
	Draining   int
	Pending    int64
	Active     int64
	Scheduled  int64
	Retry      int64
	Dead       int64
	// Succeeded counts the succeeded tasks still kept, those enqueued with a
	// Retention that has not run out; a task without one leaves Redis as
	// it succeeds. For how many were processed, use History.
	Succeeded int64
	// Waiting counts the tasks held for their group (not in
	// Pending): the group is at its GroupConcurrency or GroupRate, or paused.
	Waiting int64
	Paused  bool
	// SucceededTotal counts the tasks that succeeded since the queue began, and
	// Failed the attempts that failed (retried or dead): monotonic, for
	// Prometheus's _total counters and rates (History has them per minute).
	SucceededTotal int64
	FailedTotal    int64
	// Latency is the age of the oldest pending task (0 when none is pending).
	Latency time.Duration
	// ActiveGroups counts the groups with tasks waiting, held or
	// not. Inspector.Groups lists them. A group whose tasks were all placed in
	// turns counts until the end of the turn that starts its last task.
	ActiveGroups int64
}

// Queues returns the names of every queue that has been enqueued to, sorted.
func (i *Inspector) Queues(ctx context.Context) ([]string, error) {
	m, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for q := range m {
		names = append(names, q)
	}
	sort.Strings(names)
	return names, nil
}

// registry reads queue name -> layout: as an operator set it, else the
// count recorded by producers and workers (Route == Serve). One round trip.
func (i *Inspector) registry(ctx context.Context) (map[string]layout.Layout, error) {
	var raw, lay map[string]string
	err := rcall.Do(ctx, i.rdb, func() error {
		var reg, lcmd *redis.MapStringStringCmd
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			reg = p.HGetAll(ctx, keys.Queues(i.cfg.Prefix))
			lcmd = p.HGetAll(ctx, keys.Layout(i.cfg.Prefix))
			return nil
		})
		if err != nil {
			return err
		}
		raw, lay = reg.Val(), lcmd.Val()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read queue registry: %w", err)
	}
	out := make(map[string]layout.Layout, len(raw))
	for q, v := range raw {
		if l, err := layout.Parse(lay[q]); err == nil {
			out[q] = l
			continue
		}
		n, _ := layout.ParseCount(v) // 0 when it is no count: the queue's configured count rules
		n = max(n, 1)
		out[q] = layout.Layout{Route: n, Serve: n}
	}
	return out, nil
}

// served maps each queue of reg to the partitions workers serve.
func served(reg map[string]layout.Layout) map[string]int {
	out := make(map[string]int, len(reg))
	for q, l := range reg {
		out[q] = l.Serve
	}
	return out
}

// partitions returns the partition count of queue: the partitions served
// (draining ones included) when an operator set its layout, else the
// larger of the registry's and the config's. A queue the registry does not
// know (nothing was ever enqueued to it and no worker serves it) is
// ErrNotFound. One round trip.
func (i *Inspector) partitions(ctx context.Context, queue string) (int, error) {
	l, err := i.partitionsOf(ctx, []string{queue})
	return l[queue].Serve, err
}

// partitionsOf is the layout of each of queues, in one round trip: as an
// operator set it, else the larger of the registry's and the config's
// count (Route == Serve).
func (i *Inspector) partitionsOf(ctx context.Context, queues []string) (map[string]layout.Layout, error) {
	if len(queues) == 0 {
		return map[string]layout.Layout{}, nil
	}
	for _, q := range queues {
		if err := checkQueueName(q); err != nil {
			return nil, err
		}
	}
	var reg, lay *redis.SliceCmd
	err := rcall.Do(ctx, i.rdb, func() error {
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			reg = p.HMGet(ctx, keys.Queues(i.cfg.Prefix), queues...)
			lay = p.HMGet(ctx, keys.Layout(i.cfg.Prefix), queues...)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read queue registry: %w", err)
	}
	counts, layouts := reg.Val(), lay.Val()
	out := make(map[string]layout.Layout, len(queues))
	for j, q := range queues {
		v, ok := counts[j].(string)
		if !ok {
			return nil, fmt.Errorf("%w: %q", errQueueNotFound, q)
		}
		if s, _ := layouts[j].(string); s != "" {
			if l, err := layout.Parse(s); err == nil {
				out[q] = l
				continue
			}
		}
		n, _ := layout.ParseCount(v)
		n = max(n, i.cfg.partitions(q))
		out[q] = layout.Layout{Route: n, Serve: n}
	}
	return out, nil
}

// QueueInfo returns the counts of queue in one round trip after the registry lookup.
func (i *Inspector) QueueInfo(ctx context.Context, queue string) (*QueueInfo, error) {
	ls, err := i.partitionsOf(ctx, []string{queue})
	if err != nil {
		return nil, err
	}
	n := ls[queue].Serve
	cmds := make([]*redis.Cmd, n)
	err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, part int, k keys.Partition) {
		cmds[part] = p.Run(ctx, script.Counts, countKeys(k), countArgs(k)...)
	})
	if err != nil {
		return nil, fmt.Errorf("queue info %q: %w", queue, err)
	}
	info := &QueueInfo{Queue: queue, Partitions: n, Draining: n - ls[queue].Route}
	now := time.Now()
	for _, cmd := range cmds {
		if err := info.add(cmd, now); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// countKeys are the KEYS of script.Counts for partition k, and countArgs its ARGV.
func countKeys(k keys.Partition) []string {
	return []string{k.First(), k.Last(), k.Active(), k.Scheduled(), k.Retry(), k.Dead(), k.Done(), k.Paused()}
}

func countArgs(k keys.Partition) []any {
	return []any{k.ShardPrefix(), k.ParkedCount(), k.StatsTotal("done"), k.StatsTotal("failed"), k.Tomb()}
}

// add adds one partition's script.Counts reply to info.
func (info *QueueInfo) add(cmd *redis.Cmd, now time.Time) error {
	res, err := cmd.Slice()
	if err != nil || len(res) < 9 {
		return fmt.Errorf("queue info %q: unexpected reply %v: %w", info.Queue, res, err)
	}
	c := func(j int) int64 { v, _ := res[j].(int64); return v }
	info.Pending += c(0)
	info.Active += c(1)
	info.Scheduled += c(2)
	info.Retry += c(3)
	info.Dead += c(4)
	info.Succeeded += c(5)
	info.Paused = info.Paused || c(6) == 1
	info.Waiting += c(8)
	if len(res) >= 11 {
		info.SucceededTotal += c(9)
		info.FailedTotal += c(10)
	}
	if len(res) >= 13 {
		info.ActiveGroups += c(12)
	}
	heads := []any{res[7]}
	if len(res) >= 12 {
		keyed, _ := res[11].([]any)
		heads = append(heads, keyed...)
	}
	for _, h := range heads {
		if head, _ := h.(string); head != "" {
			if m, err := wire.DecodeMessage([]byte(head)); err == nil && m.EnqueuedAt > 0 {
				info.Latency = max(info.Latency, now.Sub(time.UnixMilli(m.EnqueuedAt)))
			}
		}
	}
	return nil
}

// GetTask returns what queue knows of the task id: its record when it has
// left pending, or its entry in the recent feed while it is pending. The
// payload is in TaskInfo.Payload (see Decode). A task that is neither is
// ErrNotFound.
func (i *Inspector) GetTask(ctx context.Context, queue, id string) (*TaskInfo, error) {
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, n)
	err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, part int, k keys.Partition) {
		cmds[part] = p.Run(ctx, script.GetTask, getTaskKeys(k), wire.StoredID(id))
	})
	if err != nil {
		return nil, fmt.Errorf("get task %q in queue %q: %w", id, queue, err)
	}
	for part, cmd := range cmds {
		ti, err := getTaskReply(i.opener(), queue, part, id, cmd)
		if err != nil {
			return nil, err
		}
		if ti != nil {
			return ti, nil
		}
	}
	return nil, fmt.Errorf("%w: %q in queue %q", errTaskNotFound, id, queue)
}

// getTaskKeys returns the KEYS of get_task.lua for partition k.
func getTaskKeys(k keys.Partition) []string {
	return []string{k.Msg(), k.State(), k.FeedMsg(), k.Feed(), k.Progress(), k.Result(), k.Cancel(), k.Steps()}
}

// getTaskReply reads get_task.lua's reply for task id in partition part
// of queue: the task, opened by o, or nil when the partition does not
// hold it.
func getTaskReply(o *opener, queue string, part int, id string, cmd *redis.Cmd) (*TaskInfo, error) {
	res, err := cmd.Slice()
	if err != nil || len(res) < 3 {
		return nil, fmt.Errorf("get task %q: unexpected reply %v: %w", id, res, err)
	}
	msg, ok := res[0].(string)
	if !ok {
		return nil, nil // nil: not in this partition ("" is an empty, malformed message)
	}
	rec, _ := res[1].(string)
	ti := taskFromReply(queue, part, wire.StoredID(id), msg, rec)
	ti.Rank, _ = res[2].(int64)
	ti.Rank = max(ti.Rank, 0)
	if len(res) >= 5 {
		if s, ok := res[3].(string); ok {
			if pr, err := wire.DecodeProgress([]byte(s)); err == nil {
				ti.Progress = &Progress{Percent: pr.Percent, Message: pr.Message, At: time.UnixMilli(pr.At)}
			}
		}
		if s, ok := res[4].(string); ok {
			ti.Result, ti.HasResult = []byte(s), true
		}
	}
	if len(res) >= 6 {
		ti.CancelRequested = res[5] == int64(1)
	}
	var stepsErr error
	if len(res) >= 7 {
		if s, ok := res[6].(string); ok {
			steps, err := wire.DecodeSteps([]byte(s))
			stepsErr = err
			for _, st := range steps {
				ti.Steps = append(ti.Steps, StepInfo{Name: st.Name, FinishedAt: time.UnixMilli(st.At), Value: st.Result})
			}
		}
	}
	o.open(ti)
	if stepsErr != nil {
		// the task is still there to see, and to delete
		ti.Malformed = true
		ti.LastError = strings.TrimPrefix(ti.LastError+"; "+stepsErr.Error(), "; ")
	}
	return ti, nil
}

// taskFromReply decodes a message and an optional record. A message that
// does not decode (pushed by a foreign client, truncated) still describes a
// task: its bytes come back as a raw payload, Malformed is set, and
// LastError says why, unless the record has the error a worker recorded.
func taskFromReply(queue string, part int, id, msg, rec string) *TaskInfo {
	var r *wire.Record
	var recErr error
	if rec != "" {
		r, recErr = wire.DecodeRecord([]byte(rec))
	}
	m, err := wire.DecodeMessage([]byte(msg))
	if err != nil {
		m = &wire.Message{ID: id, Payload: []byte(msg), Raw: true}
	}
	ti := newTaskInfo(queue, part, m, r)
	ti.Malformed = err != nil
	if joined := errors.Join(err, recErr); ti.LastError == "" && joined != nil {
		ti.LastError = joined.Error()
	}
	return ti
}

// Pause stops workers from starting tasks of queue until Resume; running
// tasks finish, enqueueing goes on. With groups, it pauses only those
// groups of the queue: their new tasks wait and the other groups' tasks
// run. Either holds across restarts, and for tasks enqueued later.
func (i *Inspector) Pause(ctx context.Context, queue string, groups ...string) error {
	if len(groups) > 0 {
		return i.groupsOp(ctx, queue, "pause", groups)
	}
	return i.setPaused(ctx, queue, true)
}

// Resume lets workers start tasks of a paused queue again, or, with
// groups, of those paused groups: a group takes its turn after the groups
// waiting now.
func (i *Inspector) Resume(ctx context.Context, queue string, groups ...string) error {
	if len(groups) > 0 {
		return i.groupsOp(ctx, queue, "resume", groups)
	}
	return i.setPaused(ctx, queue, false)
}

func (i *Inspector) setPaused(ctx context.Context, queue string, paused bool) error {
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return err
	}
	err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, _ int, k keys.Partition) {
		if paused {
			p.Set(ctx, k.Paused(), 1, 0)
		} else {
			p.Del(ctx, k.Paused())
		}
	})
	if err != nil {
		return fmt.Errorf("pause %q (%v): %w", queue, paused, err)
	}
	return nil
}

// perPartition calls fn for each of queue's n partitions, queueing its
// commands on one pipeline: one round trip, NOSCRIPT recovered, bounded by
// ctx. fn keeps the Cmds it needs; errors other than redis.Nil come back.
func (i *Inspector) perPartition(ctx context.Context, queue string, n int, fn func(p *rcall.Pipe, part int, k keys.Partition)) error {
	return rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for part := range n {
				fn(p, part, keys.For(i.cfg.Prefix, queue, part))
			}
			return nil
		})
	})
}
