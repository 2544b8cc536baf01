// Package route keeps what a producer knows of its queues' routes: how
// many partitions each queue's new tasks go to (the Config's count, or the
// layout an operator set, read from Redis and trusted for LayoutRefresh),
// which partition a task goes to, and whether this producer wrote the
// queue's registry entry lately. The queue package's Client holds one
// Table; the reads and writes it needs ride in the enqueue's round trip.
package route

import (
	"context"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
)

// RegistryRefresh is how often a producer writes a queue's registry entry
// again as it enqueues: a queue deleted (Inspector.DeleteQueue) while a
// producer still feeds it comes back to the queue list within it.
const RegistryRefresh = time.Minute

// LayoutRefresh is how long a producer trusts what it read of a queue's
// partition layout (Inspector.SetPartitions) before it reads it again,
// with the next enqueue to that queue: a raised count reaches every
// producer within it. A lowered one takes effect at once: the removed
// partitions refuse enqueues (codes.EnqClosed) and the producer routes
// again.
const LayoutRefresh = 2 * time.Second

// Table is one producer's routes.
type Table struct {
	prefix     string
	partitions map[string]int // the Config's counts
	log        *slog.Logger
	rr         atomic.Uint64 // round-robin over partitions
	registered sync.Map      // queue name -> registration
	layouts    sync.Map      // queue name -> layoutEntry
}

// registration is a queue's registry entry as this producer wrote it.
type registration struct {
	n  int
	at time.Time
}

// layoutEntry is what a producer last read of a queue's layout.
type layoutEntry struct {
	l   layout.Layout
	set bool // the operator set one; else the Config's count rules
	at  time.Time
}

// New returns the routes of a producer of prefix whose Config counts
// partitions (a queue it lacks has one); log hears of bad layouts.
func New(prefix string, partitions map[string]int, log *slog.Logger) *Table {
	return &Table{prefix: prefix, partitions: partitions, log: log}
}

// Count returns how many partitions queue's new tasks go to: the layout's
// route count when an operator set one, else the Config's count.
func (t *Table) Count(queue string) int {
	if v, ok := t.layouts.Load(queue); ok && v.(layoutEntry).set {
		return v.(layoutEntry).l.Route
	}
	return max(t.partitions[queue], 1)
}

// Pick returns the partition of queue for a task placed by key (its route
// key), round-robin when key is "", among the Count partitions.
func (t *Table) Pick(queue, key string) int {
	n := t.Count(queue)
	if n == 1 {
		return 0
	}
	if key == "" {
		return int(t.rr.Add(1) % uint64(n))
	}
	return layout.Pick(key, n)
}

// Guessing reports whether routing a task of queue now would guess: no
// layout of it was ever read, and the Config counts more than one
// partition. An operator's layout may serve fewer (Inspector.
// SetPartitions), and partitions that never existed refuse nothing, so a
// task routed past them would wait where no worker looks: the caller
// reads the layout first (Read).
func (t *Table) Guessing(queue string) bool {
	if t.partitions[queue] <= 1 {
		return false
	}
	_, read := t.layouts.Load(queue)
	return !read
}

// Known reports whether this producer wrote queue's registry entry and
// read its layout lately: a call to it need carry neither.
func (t *Table) Known(queue string) bool {
	return t.Registered(queue) && !t.Stale(queue)
}

// Registered reports whether this producer wrote queue's registry entry,
// with its count now, within RegistryRefresh.
func (t *Table) Registered(queue string) bool {
	v, ok := t.registered.Load(queue)
	if !ok {
		return false
	}
	r := v.(registration)
	return r.n == t.Count(queue) && time.Since(r.at) < RegistryRefresh
}

// Register adds to p the registry entries of queues that this producer
// has not written lately, and returns what it added, for Remember once p
// ran. queues is a sequence, so a caller's groups need no slice of names.
func (t *Table) Register(ctx context.Context, p *rcall.Pipe, queues iter.Seq[string]) map[string]int {
	var fresh map[string]int
	for q := range queues {
		if t.Registered(q) {
			continue
		}
		if fresh == nil {
			fresh = map[string]int{}
		}
		if _, ok := fresh[q]; !ok {
			n := t.Count(q)
			p.HSet(ctx, keys.Queues(t.prefix), q, n)
			fresh[q] = n
		}
	}
	return fresh
}

// Remember records registry entries written (queue -> partitions).
func (t *Table) Remember(fresh map[string]int) {
	for q, n := range fresh {
		t.registered.Store(q, registration{n: n, at: time.Now()})
	}
}

// Stale reports whether queue's layout was not read within LayoutRefresh.
func (t *Table) Stale(queue string) bool {
	v, ok := t.layouts.Load(queue)
	return !ok || time.Since(v.(layoutEntry).at) >= LayoutRefresh
}

// Learn adds to p a read of the stale layouts among queues, riding in the
// caller's round trip, and returns what stores the answer once p ran; nil
// when none is stale.
func (t *Table) Learn(ctx context.Context, p redis.Pipeliner, queues iter.Seq[string]) func() {
	var stale []string
	for q := range queues {
		if t.Stale(q) && !slices.Contains(stale, q) {
			stale = append(stale, q)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	cmd := p.HMGet(ctx, keys.Layout(t.prefix), stale...)
	return func() {
		if vals, err := cmd.Result(); err == nil {
			t.store(stale, vals)
		}
	}
}

// Read reads the layouts of queues in a round trip of its own.
func (t *Table) Read(ctx context.Context, rdb redis.UniversalClient, queues []string) error {
	var vals []any
	err := rcall.Do(ctx, rdb, func() (err error) {
		vals, err = rdb.HMGet(ctx, keys.Layout(t.prefix), queues...).Result()
		return err
	})
	if err != nil {
		return err
	}
	t.store(queues, vals)
	return nil
}

// Forget drops every layout read, so the next call reads them again.
func (t *Table) Forget() {
	t.layouts.Range(func(k, _ any) bool { t.layouts.Delete(k); return true })
}

// store caches an HMGET reply of the layouts of queues.
func (t *Table) store(queues []string, vals []any) {
	now := time.Now()
	for j, q := range queues {
		e := layoutEntry{at: now}
		if v, ok := vals[j].(string); ok {
			if l, err := layout.Parse(v); err == nil {
				e.l, e.set = l, true
			} else {
				t.log.Warn("ignoring a bad partition layout", "queue", q, "err", err)
			}
		}
		t.layouts.Store(q, e)
	}
}
