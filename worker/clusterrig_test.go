package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// soakEnv, set to 1, makes the cluster failover and migration tests run
// longer and repeat their failures (see the README's "What happens when
// things die").
const soakEnv = "SHARDQ_SOAK"

func soak() bool { return os.Getenv(soakEnv) == "1" }

// clusterURL is the redis+cluster:// URL of cl's nodes, so tests use the
// client queue.NewRedisClient configures, as users do.
func clusterURL(cl *redistest.Cluster) string {
	addrs := cl.Addrs()
	u := "redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	return u + "&dial_timeout=1s&read_timeout=2s&write_timeout=2s"
}

// clusterClient returns a client for cl made by queue.NewRedisClient,
// closed in t.Cleanup.
func clusterClient(t *testing.T, cl *redistest.Cluster) *redis.ClusterClient {
	t.Helper()
	rdb, err := queue.NewRedisClient(clusterURL(cl))
	must(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb.(*redis.ClusterClient)
}

// spreadQueue returns a queue name whose n partitions, under prefix, land
// on every master of cl (n at least the number of masters), and the master
// of each partition. Slots follow from the names (CRC16 of the hash tag),
// so it tries names in a fixed order.
func spreadQueue(t *testing.T, cl *redistest.Cluster, prefix string, n int) (string, []*redistest.Server) {
	t.Helper()
	for i := range 200 {
		q := fmt.Sprintf("spread%d", i)
		masters := make([]*redistest.Server, n)
		seen := map[*redistest.Server]bool{}
		for p := range n {
			masters[p] = cl.MasterOf(t, cl.Slot(t, keys.For(prefix, q, p).T))
			seen[masters[p]] = true
		}
		if len(seen) == len(cl.Nodes) {
			return q, masters
		}
	}
	t.Fatalf("no queue name of 200 spreads %d partitions over %d masters", n, len(cl.Nodes))
	return "", nil
}

// ledger records what producers were told and what handlers saw, for the
// failover and migration tests.
type ledger struct {
	mu      sync.Mutex
	acked   map[string]time.Time // task ID -> when Enqueue returned nil
	notRepl int                  // enqueues that returned ErrNotReplicated
	failed  int                  // enqueues that returned another error
	errs    map[string]int       // their messages, counted
	runs    map[string]int       // task ID -> handler runs
	okAt    map[int][]time.Time  // partition -> enqueues answered after mark (ErrNotReplicated too)
	ranAt   map[int][]time.Time  // partition -> handler runs after mark
	mark    time.Time            // the failure's instant
	lastErr time.Time            // the last failed enqueue
}

func newLedger() *ledger {
	return &ledger{acked: map[string]time.Time{}, errs: map[string]int{}, runs: map[string]int{}, okAt: map[int][]time.Time{}, ranAt: map[int][]time.Time{}}
}

// enqueued records one Enqueue's outcome.
func (l *ledger) enqueued(info *queue.TaskInfo, err error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.acked[info.ID] = now
		if !l.mark.IsZero() {
			l.okAt[info.Partition] = append(l.okAt[info.Partition], now)
		}
	case info != nil: // ErrNotReplicated: enqueued, not acknowledged
		l.notRepl++
		if !l.mark.IsZero() {
			l.okAt[info.Partition] = append(l.okAt[info.Partition], now)
		}
	default:
		l.failed++
		l.lastErr = now
		l.errs[err.Error()]++
	}
}

// ran records one handler run.
func (l *ledger) ran(t *Task) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[t.ID]++
	if !l.mark.IsZero() {
		l.ranAt[t.Partition] = append(l.ranAt[t.Partition], now)
	}
}

// activeSince reports whether every partition in ps had an enqueue
// answered and a task run after t.
func (l *ledger) activeSince(t time.Time, ps map[int]bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range ps {
		ok, ran := l.okAt[p], l.ranAt[p]
		if len(ok) == 0 || len(ran) == 0 || ok[len(ok)-1].Before(t) || ran[len(ran)-1].Before(t) {
			return false
		}
	}
	return true
}

// String summarises the recent events per partition, for failure messages.
func (l *ledger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for p := range 8 {
		ok, ran := l.okAt[p], l.ranAt[p]
		if len(ok)+len(ran) == 0 {
			continue
		}
		last := func(ts []time.Time) string {
			if len(ts) == 0 {
				return "never"
			}
			return time.Since(ts[len(ts)-1]).Round(time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(&b, "partition %d: %d answered (last %s), %d run (last %s); ", p, len(ok), last(ok), len(ran), last(ran))
	}
	fmt.Fprintf(&b, "%d failed enqueues, the last %s ago", l.failed, time.Since(l.lastErr).Round(time.Millisecond))
	return b.String()
}

// reset forgets the recovery instants of the last failure.
func (l *ledger) reset() {
	l.mu.Lock()
	l.okAt, l.ranAt = map[int][]time.Time{}, map[int][]time.Time{}
	l.mu.Unlock()
}

// setMark notes the instant of the failure.
func (l *ledger) setMark() {
	l.mu.Lock()
	l.mark = time.Now()
	l.mu.Unlock()
}

// figures are what a failure cost, as the README reports them.
type figures struct {
	acked, notRepl, failed, lost, twice int
	errs                                map[string]int
	// producers and workers: from the failure until the end of the
	// longest silence after it in the enqueues answered, and the tasks
	// run, on the affected partitions (the slowest of them); -1 when
	// nothing happened on one after the failure
	producers, workers time.Duration
}

// figures counts, for the partitions in affected, what the failure cost.
func (l *ledger) figures(affected map[int]bool) figures {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := figures{acked: len(l.acked), notRepl: l.notRepl, failed: l.failed, errs: maps.Clone(l.errs)}
	for id := range l.acked {
		if l.runs[id] == 0 {
			f.lost++
		}
	}
	for _, n := range l.runs {
		if n > 1 {
			f.twice++
		}
	}
	for p := range affected {
		f.producers = worse(f.producers, outage(l.mark, l.okAt[p]))
		f.workers = worse(f.workers, outage(l.mark, l.ranAt[p]))
	}
	return f
}

// worse is the longer of two outages, -1 (never recovered) being longest.
func worse(a, b time.Duration) time.Duration {
	if a < 0 || b < 0 {
		return -1
	}
	return max(a, b)
}

// outage returns how long after mark the longest silence between events
// (in time order) ended, or -1 when there was no event after mark.
func outage(mark time.Time, events []time.Time) time.Duration {
	prev, end, gap := mark, time.Time{}, time.Duration(-1)
	for _, e := range events {
		if d := e.Sub(prev); d > gap {
			gap, end = d, e
		}
		prev = e
	}
	if end.IsZero() {
		return -1
	}
	return end.Sub(mark).Round(time.Millisecond)
}

// produce enqueues to q from producers goroutines until ctx ends (at most
// limit tasks each), recording every outcome in l.
func produce(ctx context.Context, client *queue.Client, q string, producers, limit int, l *ledger) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fin := make(chan struct{}, producers)
		for range producers {
			go func() {
				defer func() { fin <- struct{}{} }()
				for i := 0; i < limit && ctx.Err() == nil; i++ {
					cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					info, err := client.Enqueue(cctx, queue.NewRawTask("t", nil), queue.In(q))
					cancel()
					if ctx.Err() != nil {
						return // the run is over: this outcome is not counted
					}
					l.enqueued(info, err)
					if err != nil {
						time.Sleep(20 * time.Millisecond)
					} else {
						time.Sleep(2 * time.Millisecond) // a steady stream, not a flood
					}
				}
			}()
		}
		for range producers {
			<-fin
		}
	}()
	return done
}

// produceBursts enqueues, every interval until ctx ends, a burst of size
// tasks at once (one goroutine each, released together): calls beyond a
// few in flight coalesce (queue.Config.NoCoalescing), so their outcomes
// come from shared batch calls. Each outcome goes to l, as produce's do,
// and acked counts the acknowledged.
func produceBursts(ctx context.Context, client *queue.Client, q string, size int, every time.Duration, l *ledger, acked *atomic.Int64) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range size {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					info, err := client.Enqueue(cctx, queue.NewRawTask("t", nil), queue.In(q))
					cancel()
					if ctx.Err() == nil {
						l.enqueued(info, err)
						if err == nil {
							acked.Add(1)
						}
					}
				}()
			}
			close(start)
			wg.Wait()
		}
	}()
	return done
}

// scriptCalls counts the script calls (EVALSHA, EVAL) a client sends,
// retries included: a go-redis hook.
type scriptCalls struct{ n atomic.Int64 }

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// errClasses counts the errors of the cluster's kinds (MOVED, ASK,
// TRYAGAIN, CLUSTERDOWN, READONLY, UNBLOCKED, connection errors) that a
// client's nodes answered, before go-redis or shardq acted on them: a hook
// on every node client (ClusterClient.OnNewNode).
type errClasses struct {
	mu sync.Mutex
	n  map[string]int
}

// watchErrors installs a counter on every node client of rdb.
func watchErrors(rdb *redis.ClusterClient) *errClasses {
	e := &errClasses{n: map[string]int{}}
	rdb.OnNewNode(func(c *redis.Client) { c.AddHook(e) })
	return e
}

func (e *errClasses) note(cmd redis.Cmder) {
	err := cmd.Err()
	if err == nil || errors.Is(err, redis.Nil) || cmd.Name() == "client" || cmd.Name() == "hello" {
		return // go-redis's handshake tries commands Redis 7.0 lacks
	}
	class := "connection"
	var re redis.Error
	if errors.As(err, &re) {
		class, _, _ = strings.Cut(re.Error(), " ")
	}
	e.mu.Lock()
	e.n[class]++
	e.mu.Unlock()
}

// get returns how many errors of class were seen.
func (e *errClasses) get(class string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[class]
}

// String lists the counts.
func (e *errClasses) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.n)
}

func (e *errClasses) DialHook(next redis.DialHook) redis.DialHook { return next }

func (e *errClasses) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		e.note(cmd)
		return err
	}
}

func (e *errClasses) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			e.note(c)
		}
		return err
	}
}

// waitDrained waits until q holds nothing pending, active, retrying or
// scheduled. On a loaded machine the backlog the producers left may take
// a while, so it fails only when the backlog stops shrinking for 30s (or
// after 5 minutes in all), saying what is left.
func waitDrained(t *testing.T, insp *queue.Inspector, q string, l *ledger) {
	t.Helper()
	const stall, limit = 30 * time.Second, 5 * time.Minute
	start, best, progress := time.Now(), int64(-1), time.Now()
	for {
		qi, err := insp.QueueInfo(context.Background(), q)
		if err == nil {
			left := qi.Pending + qi.Active + qi.Retry + qi.Scheduled
			if left == 0 {
				return
			}
			if best < 0 || left < best {
				best, progress = left, time.Now()
			}
		}
		if time.Since(progress) > stall || time.Since(start) > limit {
			t.Fatalf("queue %s did not drain (%v since it last shrank, %v in all): %+v, %v; %v",
				q, time.Since(progress).Round(time.Second), time.Since(start).Round(time.Second), qi, err, l)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
