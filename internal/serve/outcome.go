package serve

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardq/shardq/internal/wait"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

type outcomeKind int

const (
	outcomeAck outcomeKind = iota
	outcomeFail
	outcomeRequeue
)

// outcome is what became of one attempt, waiting to be written.
type outcome struct {
	p     *part
	id    string
	token int64
	kind  outcomeKind
	// ack: how long to keep the task, in ms (0 = not kept); a field of
	// its own so the script call's argument can point at it
	retentionMS int64
	unique      string
	err         string
	delayMS     int64 // fail: ms to wait before the retry; codes.None: dead
	snooze      int64 // fail: 1 = back after the delay, the attempt not counted
	// resent: an earlier try to write it failed, and may have run all
	// the same (its reply was lost), so a stale code is no news
	resent bool
	// flow is the task's flow ref ("" = none): an ack passes it to the
	// script, which reports the success to the flow (include/acks.lua)
	flow string
	// workflow and node: the workflow's key and the node's name when the
	// ack applies the outcome at the workflow's home (Engine.flowTarget;
	// "" = through T:notify)
	workflow, node string
}

// markResent flags outcomes whose write is to be tried again and returns
// them.
func markResent(os []outcome) []outcome {
	for i := range os {
		os[i].resent = true
	}
	return os
}

// finish queues an outcome for writing: by the flusher, or by a fetcher
// whose next pop carries it. After the flusher stopped (shutdown gave up on
// this handler), nothing writes it: the task was requeued already and the
// token check would reject it anyway.
func (s *Engine) finish(o outcome) {
	s.outbox.Put(o)
	o.p.signalFreed()
}

// maxOutcomeBatch bounds the outcomes one round trip carries.
const maxOutcomeBatch = 1000

// flush writes the outcomes no fetcher carried. It sleeps while fetchers
// carry them (see outbox). An idle server writes each outcome at once;
// when outcomes come several at a time (handlers finishing together) it
// first gives the next ones batchWait to gather, then writes them with
// one script call per partition and kind, in one round trip. Writes are
// retried until they succeed: every outcome carries its lease token, so a
// repeat is harmless.
func (s *Engine) flush(stop <-chan struct{}) {
	defer close(s.flusherDone)
	gather := false
	for {
		select {
		case <-s.outbox.Ready():
		case <-stop:
			// shutdown: the fetchers have stopped; write what is left, then leave
			for {
				batch := s.outbox.Take(maxOutcomeBatch)
				if len(batch) == 0 {
					return
				}
				s.write(batch, stop)
			}
		}
		if gather {
			sleepUntil(stop, batchWait)
		}
		s.probe.BeforeTake(false)
		batch := s.outbox.TakeUncarried(maxOutcomeBatch)
		gather = len(batch) > 1
		if len(batch) > 0 {
			s.write(batch, stop)
			s.outbox.WakeIfUncarried() // for what came meanwhile
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
func (s *Engine) write(batch []outcome, stop <-chan struct{}) {
	var backoff wait.Backoff
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
		backoff.Sleep(context.Background())
	}
}

// writeOnce sends batch in one round trip and returns the outcomes whose
// script call failed, with the first error.
func (s *Engine) writeOnce(batch []outcome) ([]outcome, error) {
	groups := groupOutcomes(batch)
	s.send(groups)
	return s.settle(groups)
}

// send makes the script call of each group, in one pipeline (under
// WaitReplicas, one call and WAIT per group: sendReplicated); settle
// reads the replies.
func (s *Engine) send(groups []outcomeGroup) {
	if s.cfg.WaitReplicas > 0 {
		s.sendReplicated(groups)
		return
	}
	ctx := context.Background()
	_ = rcall.Pipelined(ctx, s.rdb, func(pipe *rcall.Pipe) error {
		s.queueOutcomeGroups(ctx, pipe, groups)
		return nil
	})
}

// outcomeGroup is the outcomes of one partition and kind: one script call.
type outcomeGroup struct {
	p     *part
	kind  outcomeKind
	items []outcome
	cmd   *redis.Cmd
}

// groupOutcomes sorts batch in place by partition and kind, keeping the
// order within each, and returns its groups as slices of it: no copies.
func groupOutcomes(batch []outcome) []outcomeGroup {
	slices.SortStableFunc(batch, func(a, b outcome) int {
		return cmp.Or(cmp.Compare(a.p.ord, b.p.ord), cmp.Compare(a.kind, b.kind))
	})
	var groups []outcomeGroup
	for i := 0; i < len(batch); {
		j := i + 1
		for j < len(batch) && batch[j].p == batch[i].p && batch[j].kind == batch[i].kind {
			j++
		}
		groups = append(groups, outcomeGroup{p: batch[i].p, kind: batch[i].kind, items: batch[i:j:j]})
		i = j
	}
	return groups
}

// queueOutcomeGroups queues one script call per group.
func (s *Engine) queueOutcomeGroups(ctx context.Context, pipe *rcall.Pipe, groups []outcomeGroup) {
	for i := range groups {
		groups[i].cmd = s.queueOutcomes(ctx, pipe, groups[i].p, groups[i].kind, groups[i].items)
	}
}

// settle reads the replies of written outcome groups: it warns about
// outcomes a newer lease made stale and returns the outcomes of the calls
// that failed, with the first error, to be written again. A call that
// failed in its script is not sent again as it was: isolate writes its
// outcomes one by one.
func (s *Engine) settle(groups []outcomeGroup) ([]outcome, error) {
	var failed []outcome
	var first error
	for _, g := range groups {
		codes, err := g.cmd.Slice()
		if err != nil {
			if rcall.IsScriptError(err) {
				f, ferr := s.isolate(g, err, true)
				failed = append(failed, f...)
				first = cmp.Or(first, ferr)
				continue
			}
			failed = append(failed, markResent(g.items)...)
			first = cmp.Or(first, err)
			continue
		}
		s.written(g, codes)
	}
	return failed, first
}

// written notes a group whose call answered codes.
func (s *Engine) written(g outcomeGroup, codes []any) {
	s.warnStale(g.items, codes)
	s.flowsWritten(g.items)
	// their concurrency-limit holds are released now; whichever round
	// trip carried them, a fetcher waiting at the limit looks again
	g.p.signalFreed()
}

// isolate writes the outcomes of group g, whose call failed with script
// error err, one script call each, in one round trip; alone says that
// call carried g alone (not a pop's), so a single outcome is not sent
// again. A script error is an answer, not a lost reply: the script ran
// up to the error and stopped, and sent again as it was it would stop
// there again, every time, while the leases of all its tasks ran out and
// they ran again. An ack script stops on what it reads before it writes
// any ack's own changes (include/acks.lua), so the other outcomes of g
// land once. An ack whose own call still fails can never be written: its
// task goes dead, with the error as its last error, once (refuseAcks). A
// failure or requeue that cannot be written is logged and left to its
// lease, as after a crash. It returns the outcomes whose calls failed
// otherwise (a connection lost), to be written again as any, with the
// first error.
func (s *Engine) isolate(g outcomeGroup, err error, alone bool) ([]outcome, error) {
	var failed, refused []outcome
	var why []error
	var first error
	if len(g.items) == 1 && alone {
		refused, why = g.items, []error{err}
	} else {
		singles := make([]outcomeGroup, len(g.items))
		for i := range g.items {
			singles[i] = outcomeGroup{p: g.p, kind: g.kind, items: g.items[i : i+1 : i+1]}
		}
		s.send(singles)
		for _, one := range singles {
			codes, err := one.cmd.Slice()
			switch {
			case err == nil:
				s.written(one, codes)
			case rcall.IsScriptError(err):
				refused = append(refused, one.items[0])
				why = append(why, err)
			default:
				failed = append(failed, markResent(one.items)...)
				first = cmp.Or(first, err)
			}
		}
	}
	if len(refused) == 0 {
		return failed, first
	}
	if g.kind != outcomeAck {
		for i, o := range refused {
			s.log.Error("a task's outcome cannot be written: Redis failed its script; its lease will expire and the task runs again",
				"task", wire.PublicID(o.id), "queue", o.p.queue, "outcome", o.kind.String(), "err", why[i])
		}
		return failed, first
	}
	f, ferr := s.refuseAcks(refused, why)
	return append(failed, f...), cmp.Or(first, ferr)
}

// ackRefused opens the last error of a task whose ack Redis failed.
const ackRefused = "the handler succeeded, but Redis failed the script that acks the task"

// refuseAcks sends the tasks of acks, which Redis failed to write one by
// one (why: each one's error), to dead, with the error as their last
// error: a state an operator sees, with its reason, and can retry from
// (Inspector.RunTask, the dashboard). A workflow node's death reaches
// its workflow as any death does. It returns the deaths whose write
// failed for a lost connection, to be written as any failure.
func (s *Engine) refuseAcks(acks []outcome, why []error) ([]outcome, error) {
	deads := make([]outcome, len(acks))
	for i, a := range acks {
		deads[i] = outcome{p: a.p, id: a.id, token: a.token, kind: outcomeFail, delayMS: codes.None, flow: a.flow,
			err: fmt.Sprintf("%s: %v", ackRefused, why[i])}
	}
	groups := groupOutcomes(deads)
	s.send(groups)
	var failed []outcome
	var first error
	for _, g := range groups {
		res, err := g.cmd.Slice()
		switch {
		case err == nil:
			for j, o := range g.items {
				if j >= len(res) {
					break
				}
				if c, _ := res[j].(int64); c == codes.FailDead {
					s.log.Error("a task succeeded but Redis failed its ack; the task is dead, with the error as its last error",
						"task", wire.PublicID(o.id), "queue", o.p.queue, "err", o.err)
				}
			}
			s.written(g, res)
		case rcall.IsScriptError(err):
			for _, o := range g.items {
				s.log.Error("a task succeeded but Redis failed its ack, and its death too; its lease will expire and the task runs again",
					"task", wire.PublicID(o.id), "queue", o.p.queue, "ack", o.err, "err", err)
			}
		default:
			failed = append(failed, markResent(g.items)...)
			first = cmp.Or(first, err)
		}
	}
	return failed, first
}

// warnStale warns about the outcomes a script's codes say were stale
// (code 0): a newer lease of the task belongs to another worker.
func (s *Engine) warnStale(items []outcome, codes []any) {
	for j, o := range items {
		if j >= len(codes) {
			return
		}
		if c, _ := codes[j].(int64); c == 0 {
			if o.resent {
				s.log.Info("outcome not written again: an earlier try whose reply was lost wrote it, or the task's lease was taken over",
					"task", wire.PublicID(o.id), "queue", o.p.queue, "outcome", o.kind.String(), "token", o.token)
				continue
			}
			s.log.Warn("stale outcome rejected: the task's lease was taken over, another worker owns it",
				"task", wire.PublicID(o.id), "queue", o.p.queue, "outcome", o.kind.String(), "token", o.token)
		}
	}
}

// queueOutcomes queues the script call that writes os, outcomes of one
// partition and kind. Its arguments point into os, which stays untouched
// until the call's reply is read: no value is boxed per task.
func (s *Engine) queueOutcomes(ctx context.Context, pipe *rcall.Pipe, p *part, kind outcomeKind, os []outcome) *redis.Cmd {
	script, keys, args := s.outcomeCall(p, kind, os)
	return pipe.Run(ctx, script, keys, args...)
}

// outcomeCall returns the script call that writes os (see queueOutcomes).
func (s *Engine) outcomeCall(p *part, kind outcomeKind, os []outcome) (*rcall.Script, []string, []any) {
	k := p.k
	switch kind {
	case outcomeAck:
		args := make([]any, 0, 5+4*len(os))
		args = append(args, k.T, s.cfg.now(), s.cfg.SucceededSize, s.cfg.ShardSize)
		args = appendAcks(args, os)
		return script.Ack, p.ackKeys, args
	case outcomeFail:
		args := make([]any, 0, 4+5*len(os))
		args = append(args, k.T, s.cfg.now(), s.cfg.DeadSize, s.cfg.ShardSize)
		for i := range os {
			o := &os[i]
			args = append(args, &o.id, &o.token, &o.err, &o.delayMS, &o.snooze)
		}
		return script.Fail, p.failKeys, args
	default:
		args := make([]any, 0, 2+2*len(os))
		args = append(args, k.T, s.cfg.ShardSize)
		for i := range os {
			args = append(args, &os[i].id, &os[i].token)
		}
		return script.Requeue, []string{k.Active(), k.Msg(), k.State(), k.First(), k.Last(), k.Guard()}, args
	}
}

// appendAcks appends the acks as ack (and pop and claim) read them: the
// number of fields per task, then id and token and, unless every task has
// retention 0, no uniqueness ID and no flow (then 2 fields do), retention (ms)
// and uniqueness ID, the flow ref when any task has one (5 fields), and the
// workflow's key and the node's name when any ack applies its outcome at
// the workflow's home (7 fields). Acks of one workflow's nodes alone, with
// retention 0 and no uniqueness ID, take 3: the workflow's key comes once,
// before them, then id, token and node name each.
func appendAcks(args []any, os []outcome) []any {
	if len(os) == 0 {
		return args
	}
	if w := os[0].workflow; w != "" && oneWorkflow(os, w) {
		args = append(args, 3, &os[0].workflow)
		for i := range os {
			args = append(args, &os[i].id, &os[i].token, &os[i].node)
		}
		return args
	}
	width := 2
	for i := range os {
		if os[i].workflow != "" {
			width = 7
			break
		}
		if os[i].flow != "" {
			width = 5
			continue
		}
		if width < 4 && (os[i].retentionMS != 0 || os[i].unique != "") {
			width = 4
		}
	}
	args = append(args, width)
	for i := range os {
		o := &os[i]
		args = append(args, &o.id, &o.token)
		if width >= 4 {
			args = append(args, &o.retentionMS, &o.unique)
		}
		if width >= 5 {
			args = append(args, &o.flow)
		}
		if width == 7 {
			args = append(args, &o.workflow, &o.node)
		}
	}
	return args
}

// oneWorkflow reports whether every ack of os is a node of workflow w
// with retention 0 and no uniqueness ID: then the acks take 3 fields, the
// workflow's key given once.
func oneWorkflow(os []outcome, w string) bool {
	for i := range os {
		if os[i].workflow != w || os[i].retentionMS != 0 || os[i].unique != "" {
			return false
		}
	}
	return true
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
