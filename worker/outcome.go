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

// finish queues an outcome for writing: by the flusher, or by a fetcher
// whose next pop carries it. After the flusher stopped (shutdown gave up on
// this handler), nothing writes it: the task was requeued already and the
// token check would reject it anyway.
func (s *Server) finish(o outcome) { s.outbox.put(o) }

// maxOutcomeBatch bounds the outcomes one round trip carries.
const maxOutcomeBatch = 1000

// flush writes the outcomes no fetcher carried. An idle server writes each
// outcome at once. On a busy one (outcomes arrive several at a time, or
// fetchers carry them) it first leaves them batchWait to ride along with a
// fetcher's next pop, then writes what is left, with one script call per
// partition and kind, in one round trip. Writes are retried until they
// succeed: every outcome carries its lease token, so a repeat is harmless.
func (s *Server) flush(stop <-chan struct{}) {
	defer close(s.flusherDone)
	busy := false
	for {
		if s.outbox.len() == 0 {
			select {
			case <-s.outbox.ready:
			case <-stop:
				// shutdown: the fetchers have stopped; write what is left, then leave
				for {
					batch := s.outbox.take(maxOutcomeBatch, false)
					if len(batch) == 0 {
						return
					}
					s.write(batch, stop)
				}
			}
		}
		if busy || s.outbox.fetcherTook() {
			sleepUntil(stop, batchWait)
		}
		batch := s.outbox.take(maxOutcomeBatch, false)
		busy = len(batch) > 1 || s.outbox.fetcherTook()
		if len(batch) > 0 {
			s.write(batch, stop)
		}
	}
}

// sleepUntil waits d, or until stop is closed.
func sleepUntil(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}

// write sends one batch, retrying what failed with backoff while Redis
// fails (for at most ShutdownTimeout once shutdown began).
func (s *Server) write(batch []outcome, stop <-chan struct{}) {
	var wait backoff
	var giveUp time.Time
	for {
		failed, err := s.writeOnce(batch)
		if err == nil {
			return
		}
		batch = failed
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

// writeOnce sends batch in one round trip and returns the outcomes whose
// script call failed, with the first error.
func (s *Server) writeOnce(batch []outcome) ([]outcome, error) {
	ctx := context.Background()
	var groups []outcomeGroup
	_ = lua.Pipelined(ctx, s.rdb, func(pipe *lua.Pipe) error {
		groups = s.queueOutcomeGroups(ctx, pipe, batch)
		return nil
	})
	return s.settle(groups)
}

type groupKey struct {
	p    *part
	kind outcomeKind
}

// outcomeGroup is the outcomes of one partition and kind: one script call.
type outcomeGroup struct {
	key   groupKey
	items []outcome
	cmd   *redis.Cmd
}

// queueOutcomeGroups queues one script call per partition and kind of batch.
func (s *Server) queueOutcomeGroups(ctx context.Context, pipe *lua.Pipe, batch []outcome) []outcomeGroup {
	index := map[groupKey]int{}
	var groups []outcomeGroup
	for _, o := range batch {
		g := groupKey{o.p, o.kind}
		i, ok := index[g]
		if !ok {
			i = len(groups)
			index[g] = i
			groups = append(groups, outcomeGroup{key: g})
		}
		groups[i].items = append(groups[i].items, o)
	}
	for i := range groups {
		groups[i].cmd = s.queueOutcomes(ctx, pipe, groups[i].key, groups[i].items)
	}
	return groups
}

// settle reads the replies of written outcome groups: it warns about
// outcomes a newer lease made stale and returns the outcomes of the calls
// that failed, with the first error.
func (s *Server) settle(groups []outcomeGroup) ([]outcome, error) {
	var failed []outcome
	var first error
	for _, g := range groups {
		codes, err := g.cmd.Int64Slice()
		if err != nil {
			failed = append(failed, g.items...)
			if first == nil {
				first = err
			}
			continue
		}
		for j, o := range g.items {
			if j < len(codes) && codes[j] == 0 {
				s.log.Warn("stale outcome rejected: the task's lease was taken over, another worker owns it",
					"task", o.id, "queue", o.p.queue, "outcome", o.kind.String(), "token", o.token)
			}
		}
	}
	return failed, first
}

func (s *Server) queueOutcomes(ctx context.Context, pipe *lua.Pipe, g groupKey, os []outcome) *redis.Cmd {
	k := g.p.k
	switch g.kind {
	case outcomeAck:
		args := make([]any, 0, 4+4*len(os))
		args = append(args, k.T, s.cfg.now(), s.cfg.DoneSize, s.cfg.ShardSize)
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
