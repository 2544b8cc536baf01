package serve

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// drainConfirm is how long the removed partitions of a queue must be seen
// empty, at two looks at least this far apart, before a worker ends their
// drain: longer than a blocking slice and the claim after it, so a task a
// fetcher's blocking move held between the looks (in no count) is seen
// running at the second.
const drainConfirm = 2 * time.Second

// layoutState is what the queue watcher keeps between its looks. Only its
// goroutine touches it.
type layoutState struct {
	emptySince map[string]drainLook // queue -> its first empty look at this layout
}

// drainLook is a first look that found a draining queue's removed partitions empty.
type drainLook struct {
	layout string
	at     time.Time
}

// runFetcher starts p's fetcher under ctx, with a cancel of its own so a
// resize can stop it alone; wg, when not nil, counts it too.
func (s *Engine) runFetcher(ctx context.Context, p *part, wg *sync.WaitGroup) {
	pctx, stop := context.WithCancel(ctx)
	p.stop, p.done = stop, make(chan struct{})
	s.fetchers.Add(1)
	if wg != nil {
		wg.Add(1)
	}
	go func() {
		defer s.fetchers.Done()
		if wg != nil {
			defer wg.Done()
		}
		defer close(p.done)
		s.fetch(pctx, p)
	}()
}

// followLayouts reads the partition layouts operators set
// (queue.Inspector.SetPartitions; one HGETALL) and makes the partitions
// served of each queue this server runs match: fetchers start on new
// partitions and stop on partitions whose drain ended. It ends the drain
// of queues whose removed partitions hold nothing.
func (s *Engine) followLayouts(ctx context.Context) error {
	lays, err := layout.ReadAll(ctx, s.rdb, s.cfg.Prefix)
	if err != nil {
		return err
	}
	s.layouts.Store(&lays)
	for q, cur := range s.widths() {
		l, ok := lays[q]
		if !ok {
			continue
		}
		switch {
		case l.Serve > cur:
			s.growQueue(ctx, q, cur, l.Serve)
		case l.Serve < cur:
			s.shrinkQueue(q, l.Serve)
		}
		if l.Draining() {
			if err := s.checkDrain(ctx, q, l); err != nil {
				return err
			}
		} else {
			delete(s.lstate.emptySince, q)
		}
	}
	return nil
}

// widths returns how many partitions of each queue this server runs.
func (s *Engine) widths() map[string]int {
	out := map[string]int{}
	for _, p := range s.partList() {
		out[p.queue] = max(out[p.queue], p.index+1)
	}
	return out
}

// layoutSet reports whether an operator set queue's layout, as last read.
func (s *Engine) layoutSet(queue string) bool {
	m := s.layouts.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[queue]
	return ok
}

// growQueue starts serving partitions from..to-1 of queue q, with the
// weight and counts its other partitions share.
func (s *Engine) growQueue(ctx context.Context, q string, from, to int) {
	var sv *served
	if s.dyn != nil {
		sv = s.dyn.queues[q]
	}
	s.pmu.Lock()
	i := slices.IndexFunc(s.parts, func(p *part) bool { return p.queue == q })
	if i < 0 {
		s.pmu.Unlock()
		return // no longer served
	}
	first := s.parts[i]
	added := make([]*part, 0, to-from)
	for n := from; n < to; n++ {
		p := newPart(keys.For(s.cfg.Prefix, q, n), q, n, s.nextOrd, first.share, s.cfg.WorkerID)
		p.work = first.work
		s.nextOrd++
		added = append(added, p)
	}
	parts := append(slices.Clone(s.parts), added...)
	slices.SortStableFunc(parts, func(a, b *part) int { return b.share.Weight() - a.share.Weight() })
	s.parts = parts
	s.pmu.Unlock()
	fctx, wg := s.fetchCtx, (*sync.WaitGroup)(nil)
	if sv != nil {
		fctx, wg = sv.ctx, &sv.fetchers
		sv.parts = append(sv.parts, added...)
	}
	for _, p := range added {
		s.runFetcher(fctx, p, wg)
	}
	s.log.Info("serving more partitions of a queue", "queue", q, "from", from, "to", to)
}

// shrinkQueue stops serving the partitions of queue q numbered to and
// above, whose drain ended: their fetchers are cancelled and waited for
// (a blocking slice at most) and what their last blocking move took is
// given back (nothing: the partitions were seen empty and closed).
func (s *Engine) shrinkQueue(q string, to int) {
	gone := func(p *part) bool { return p.queue == q && p.index >= to }
	var removed []*part
	for _, p := range s.partList() {
		if gone(p) {
			removed = append(removed, p)
		}
	}
	for _, p := range removed {
		p.stop()
	}
	for _, p := range removed {
		<-p.done
	}
	s.giveBack(removed)
	s.pmu.Lock()
	s.parts = slices.DeleteFunc(slices.Clone(s.parts), gone)
	s.pmu.Unlock()
	if s.dyn != nil {
		if sv := s.dyn.queues[q]; sv != nil {
			sv.parts = slices.DeleteFunc(sv.parts, gone)
		}
	}
	s.log.Info("stopped serving drained partitions of a queue", "queue", q, "partitions", to)
}

// checkDrain looks at the removed partitions of queue q under layout l:
// when they hold nothing (no task pending, parked, scheduled, retrying,
// running or dead, and nothing in any worker's in-flight list) at two
// looks drainConfirm apart, it ends the drain (lua/engine/layout_finish.lua), so
// every server stops serving them and readers forget them. Closed
// partitions take no new task, so empty stays empty.
func (s *Engine) checkDrain(ctx context.Context, q string, l layout.Layout) error {
	held, err := s.drainHeld(ctx, q, l)
	if err != nil {
		return err
	}
	if held > 0 {
		delete(s.lstate.emptySince, q)
		return nil
	}
	look, ok := s.lstate.emptySince[q]
	if !ok || look.layout != l.String() {
		s.lstate.emptySince[q] = drainLook{layout: l.String(), at: time.Now()}
		return nil
	}
	if time.Since(look.at) < drainConfirm {
		return nil
	}
	delete(s.lstate.emptySince, q)
	done := layout.Layout{Route: l.Route, Serve: l.Route}
	set, err := script.LayoutFinish.Run(ctx, s.rdb, []string{keys.Layout(s.cfg.Prefix)}, q, l.String(), done.String()).Int()
	if err != nil || set == 0 {
		return err // 0: another worker ended it, or an operator changed it
	}
	// the registry's count follows, for older readers
	if err := s.rdb.HSet(ctx, keys.Queues(s.cfg.Prefix), q, l.Route).Err(); err != nil {
		return err
	}
	s.log.Info("drained the removed partitions of a queue", "queue", q, "partitions", l.Route, "were", l.Serve)
	return nil
}

// drainHeld counts what the removed partitions of q under l hold, in two
// round trips: the workers, then each partition's counts and the workers'
// in-flight lists there.
func (s *Engine) drainHeld(ctx context.Context, q string, l layout.Layout) (int64, error) {
	workers, err := s.rdb.ZRange(ctx, keys.Workers(s.cfg.Prefix), 0, -1).Result()
	if err != nil {
		return 0, err
	}
	var counts []*redis.Cmd
	var lens []*redis.IntCmd
	err = rcall.Pipelined(ctx, s.rdb, func(p *rcall.Pipe) error {
		for n := l.Route; n < l.Serve; n++ {
			k := keys.For(s.cfg.Prefix, q, n)
			counts = append(counts, p.Run(ctx, script.Counts,
				[]string{k.First(), k.Last(), k.Active(), k.Scheduled(), k.Retry(), k.Dead(), k.Done(), k.Paused()},
				k.ShardPrefix(), k.ParkedCount(), k.StatsTotal("done"), k.StatsTotal("failed"), k.Tomb()))
			for _, w := range workers {
				lens = append(lens, p.LLen(ctx, k.Inflight(w)))
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var held int64
	for _, c := range counts {
		res, err := c.Slice()
		if err != nil || len(res) < 9 {
			return 0, err
		}
		for _, j := range []int{0, 1, 2, 3, 4, 8} { // pending, active, scheduled, retry, dead, parked
			v, _ := res[j].(int64)
			held += v
		}
	}
	for _, c := range lens {
		held += c.Val()
	}
	return held, nil
}
