package worker

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/lua"
)

type outcomeKind int

const (
	outcomeAck outcomeKind = iota
	outcomeFail
	outcomeRequeue
)

// outcome is what became of one attempt, waiting to be written.
type outcome struct {
	p         *part
	id        string
	token     int64
	kind      outcomeKind
	retention time.Duration
	unique    string
	err       string
	delay     time.Duration // fail: wait before the retry; -1 = dead
	snooze    bool          // fail: back after delay, the attempt not counted
}

// finish queues an outcome for the flusher. After the flusher stopped
// (shutdown gave up on this handler), the outcome is dropped: the task was
// requeued already and the token check would reject it anyway.
func (s *Server) finish(o outcome) {
	select {
	case s.outcomes <- o:
	case <-s.flusherDone:
	}
}

// flush writes outcomes in batches: it takes one, drains what else is
// waiting, and writes them all with one script call per partition and
// kind, in one round trip. An idle server writes each outcome at once; a
// busy one batches naturally. Writes are retried until they succeed:
// every outcome carries its lease token, so a repeat is harmless.
func (s *Server) flush(stop <-chan struct{}) {
	defer close(s.flusherDone)
	const maxBatch = 1000
	batch := make([]outcome, 0, maxBatch)
	busy := false // the last batch held several: handlers are finishing fast
	for {
		select {
		case o := <-s.outcomes:
			batch = append(batch[:0], o)
		case <-stop:
			// shutdown: drain whatever is queued, then leave
			batch = batch[:0]
			for {
				select {
				case o := <-s.outcomes:
					batch = append(batch, o)
					if len(batch) < maxBatch {
						continue
					}
				default:
				}
				if len(batch) == 0 {
					return
				}
				s.write(batch, stop)
				batch = batch[:0]
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case o := <-s.outcomes:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		if busy && len(batch) < s.cfg.BatchSize/2 {
			s.gather(&batch, s.cfg.BatchSize/2)
		}
		busy = len(batch) > 1
		s.write(batch, stop)
	}
}

// gather waits, at most batchWait, for the batch to reach target: while
// handlers finish one by one, one script call then carries many outcomes.
func (s *Server) gather(batch *[]outcome, target int) {
	timer := time.NewTimer(batchWait)
	defer timer.Stop()
	for len(*batch) < target {
		select {
		case o := <-s.outcomes:
			*batch = append(*batch, o)
		case <-timer.C:
			return
		}
	}
}

// write sends one batch, retrying with backoff while Redis fails (for at
// most ShutdownTimeout once shutdown began).
func (s *Server) write(batch []outcome, stop <-chan struct{}) {
	var wait backoff
	var giveUp time.Time
	for {
		err := s.writeOnce(batch)
		if err == nil {
			return
		}
		s.logRedisError("write outcomes", err)
		select {
		case <-stop:
			if giveUp.IsZero() {
				giveUp = time.Now().Add(s.cfg.ShutdownTimeout)
			}
			if time.Now().After(giveUp) {
				s.log.Error("giving up writing task outcomes; their leases will expire and the tasks run again",
					"tasks", len(batch), "err", err)
				return
			}
		default:
		}
		wait.sleep(context.Background())
	}
}

type groupKey struct {
	p    *part
	kind outcomeKind
}

func (s *Server) writeOnce(batch []outcome) error {
	groups := map[groupKey][]outcome{}
	var order []groupKey
	for _, o := range batch {
		g := groupKey{o.p, o.kind}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], o)
	}
	ctx := context.Background()
	cmds := make([]*redis.Cmd, len(order))
	err := lua.Pipelined(ctx, s.rdb, func(pipe *lua.Pipe) error {
		for i, g := range order {
			cmds[i] = s.queueOutcomes(ctx, pipe, g, groups[g])
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, g := range order {
		codes, err := cmds[i].Int64Slice()
		if err != nil {
			return err
		}
		for j, o := range groups[g] {
			if j < len(codes) && codes[j] == 0 {
				s.log.Warn("stale outcome rejected: the task's lease was taken over, another worker owns it",
					"task", o.id, "queue", o.p.queue, "outcome", o.kind.String(), "token", o.token)
			}
		}
	}
	return nil
}

func (s *Server) queueOutcomes(ctx context.Context, pipe *lua.Pipe, g groupKey, os []outcome) *redis.Cmd {
	k := g.p.k
	switch g.kind {
	case outcomeAck:
		args := []any{k.T, s.cfg.now(), s.cfg.DoneSize, s.cfg.ShardSize}
		for _, o := range os {
			args = append(args, o.id, o.token, o.retention.Milliseconds(), o.unique)
		}
		return pipe.Run(ctx, lua.Ack, []string{k.Active(), k.Msg(), k.State(), k.FeedMsg(), k.Done(), keys.RankKey(k.Done()), k.Expire()}, args...)
	case outcomeFail:
		args := []any{k.T, s.cfg.now(), s.cfg.DeadSize, s.cfg.ShardSize}
		for _, o := range os {
			delay := int64(-1)
			if o.delay >= 0 {
				delay = o.delay.Milliseconds()
			}
			snooze := 0
			if o.snooze {
				snooze = 1
			}
			args = append(args, o.id, o.token, o.err, delay, snooze)
		}
		return pipe.Run(ctx, lua.Fail, []string{k.Active(), k.Msg(), k.State(), k.FeedMsg(), k.Retry(), k.Dead(), keys.RankKey(k.Dead())}, args...)
	default:
		args := []any{k.T, s.cfg.ShardSize}
		for _, o := range os {
			args = append(args, o.id, o.token)
		}
		return pipe.Run(ctx, lua.Requeue, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last()}, args...)
	}
}

func (k outcomeKind) String() string {
	switch k {
	case outcomeAck:
		return "ack"
	case outcomeFail:
		return "fail"
	default:
		return "requeue"
	}
}
