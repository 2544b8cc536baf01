// Package doctor audits the invariants docs/ARCHITECTURE.md states about
// what a prefix holds in Redis, and repairs what can be repaired safely:
// `shardq doctor` runs it.
//
// The audit only reads. It reads in pages (SCAN, HSCAN and ZSCAN with a
// COUNT, LRANGE by page) and sends its lookups in pipelines of a bounded
// number of commands, so it runs against a live Redis of millions of tasks
// without blocking it. What it sees is not one snapshot: a task that moves
// while a check reads it may look wrong for an instant, so a check confirms
// each violation it found with a second look before it reports it (the
// record unchanged, the entry still missing), and a repair acts only on
// what holds at the instant it runs (an engine script that checks the
// lease's fencing token, a WATCH).
//
// Each check is a named function in a file of its own; Checks lists them.
// A repair prefers the engine's own scripts (requeue, forward, reap) to raw
// writes, drops only what no task could still need (an entry with neither
// record nor message, a lock held by no live task), never deletes a task
// that could still run, and is idempotent: a second run finds nothing to do.
package doctor

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
)

// Options configures a run.
type Options struct {
	// Prefix is the key prefix of the deployment to audit (queue.Config.Prefix);
	// "" is "shardq".
	Prefix string
	// Repair fixes what can be fixed safely, after the audit.
	Repair bool
	// Examples is how many examples each finding keeps; 0 is 5.
	Examples int
	// Page is the COUNT of each SCAN, HSCAN and ZSCAN, the length of each
	// LRANGE and the IDs of each lookup; 0 is 500.
	Page int
	// Pipeline bounds the commands of one pipeline; 0 is 16.
	Pipeline int
	// ShardSize is the queues' Config.ShardSize, which a repair that pushes
	// to pending passes to the engine's scripts; 0 is 1000.
	ShardSize int
}

// Finding is what one check found.
type Finding struct {
	// Check names the check (Checks).
	Check string `json:"check"`
	// About says what the check looks for.
	About string `json:"about"`
	// Count is the number of violations found.
	Count int `json:"count"`
	// Examples are a few of them: task IDs or keys, each with where.
	Examples []string `json:"examples,omitempty"`
	// Repaired counts the violations the repair fixed.
	Repaired int `json:"repaired,omitempty"`
	// Repair says what the repair does with this class, or why it leaves it.
	Repair string `json:"repair"`
}

// Report is the result of a run.
type Report struct {
	Prefix     string     `json:"prefix"`
	Queues     int        `json:"queues"`
	Partitions int        `json:"partitions"`
	Keys       int        `json:"keys"`
	Repair     bool       `json:"repair"`
	Violations int        `json:"violations"`
	Repaired   int        `json:"repaired"`
	Findings   []*Finding `json:"findings"`
	Took       string     `json:"took"`
}

// Check is one audit: it records its findings through a.
type Check struct {
	Name  string
	About string
	// Repair says what --repair does with this class.
	Repair string
	run    func(ctx context.Context, a *audit, f *Finding) error
}

// Checks are the audits a run makes, in order.
var Checks = []Check{
	{"orphaned-records", "a record (T:state) in no list, lease or schedule its state names",
		"a runnable task goes back where its state says (active: a lease requeued without costing an attempt; pending: through forward); a dead one into the dead feed; a succeeded one or one without a message is left", orphanedRecords},
	{"orphaned-messages", "a message copy (T:msg) whose task has no record and is in no lease, schedule or feed",
		"the copy is deleted", orphanedMessages},
	{"stuck-leases", "a lease (T:active) past its deadline whose worker is not in <prefix>:workers",
		"requeue.lua returns it to pending without costing an attempt", stuckLeases},
	{"orphaned-inflight", "an in-flight list (T:inflight:<worker>) of a worker not in <prefix>:workers",
		"reap.lua gives it back to pending, no attempt costing", orphanedInflight},
	{"list-entries", "an entry of a list or set whose record disagrees with it or is missing",
		"an entry with neither record nor message is dropped; a pending entry of a finished record is left (it could still run)", listEntries},
	{"stale-tombstones", "a tombstone (T:tomb) of a deleted task that is in no pending list, so no dequeue drops it",
		"the tombstone is dropped", staleTombstones},
	{"counters", "a counter or range that disagrees with the lists: shards outside T:first..T:last, T:keyactive against the leases",
		"left: the engine's scripts own them", counters},
	{"uniqueness-locks", "a uniqueness lock held until its task finishes (no TTL) whose task is not live",
		"the lock is deleted if it still names that task", uniquenessLocks},
	{"id-claims", "a hash of TaskID claims (T:ids:*) that never expires",
		"it is given the expiry the engine would have given it", idClaims},
	{"semaphore-holders", "a semaphore holder (<prefix>:sem:<name>) whose task holds no lease",
		"the holder is removed", semaphoreHolders},
	{"quota-locks", "a quota rebalance lock that never expires",
		"the lock is deleted", quotaLocks},
	{"waiting-nodes", "a workflow node waiting though every parent finished",
		"left: the workflow's home applies outcomes, not the doctor", waitingNodes},
	{"deleted-queues", "keys under the prefix of a queue not in <prefix>:queues",
		"left: they may hold tasks; register the queue and delete it with the Inspector", deletedQueues},
	{"unused-dictionaries", "a compression dictionary (<prefix>:dict:<id>) no task type names in <prefix>:dicts",
		"left: a stored payload may still name it", unusedDictionaries},
}

// Run audits the prefix on rdb, repairing with opt.Repair.
func Run(ctx context.Context, rdb redis.UniversalClient, opt Options) (*Report, error) {
	start := time.Now()
	if opt.Prefix == "" {
		opt.Prefix = config.DefaultPrefix
	}
	if opt.Examples <= 0 {
		opt.Examples = 5
	}
	if opt.Page <= 0 {
		opt.Page = 500
	}
	if opt.Pipeline <= 0 {
		opt.Pipeline = 16
	}
	if opt.ShardSize <= 0 {
		opt.ShardSize = 1000
	}
	a := &audit{rdb: rdb, opt: opt}
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Prefix: opt.Prefix, Queues: len(a.registry), Partitions: len(a.parts), Keys: a.keyCount, Repair: opt.Repair}
	for _, c := range Checks {
		f := &Finding{Check: c.Name, About: c.About, Repair: c.Repair}
		if err := c.run(ctx, a, f); err != nil {
			return nil, fmt.Errorf("doctor: %s: %w", c.Name, err)
		}
		rep.Violations += f.Count
		rep.Repaired += f.Repaired
		rep.Findings = append(rep.Findings, f)
	}
	rep.Took = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

// audit is what the checks share: the registry, the live workers and the
// keys found under the prefix, by partition.
type audit struct {
	rdb redis.UniversalClient
	opt Options

	now      int64 // Redis's time at the start, ms
	registry map[string]int
	workers  map[string]bool
	keyCount int

	parts   []*part
	byTag   map[string]*part
	dicts   []string // <prefix>:dict:<id> keys
	sems    []string // <prefix>:sem:<name> keys
	quotas  []string // {<prefix>:<queue>:quota}:lock keys
	flows   []string // H:w:<id> keys
	foreign map[string][]string

	requeueLoaded bool // requeue.lua is in the script cache
}

// part is one partition found under the prefix and the keys of its lists
// that a check must read.
type part struct {
	queue  string
	n      int
	k      keys.Partition
	shards []int64
	lists  []string // group lists, turns and 0.1.0's parked lists
	flight []string // workers of in-flight lists
	unique []string // lock keys
	claims []string // T:ids:* keys
}

// add adds one violation to f with its example.
func (a *audit) add(f *Finding, example string) {
	f.Count++
	if len(f.Examples) < a.opt.Examples {
		f.Examples = append(f.Examples, example)
	}
}

// load reads Redis's time, the registry and the workers, and scans the
// keys under the prefix.
func (a *audit) load(ctx context.Context) error {
	t, err := a.rdb.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("doctor: read the server's time: %w", err)
	}
	a.now = t.UnixMilli()
	reg, err := a.rdb.HGetAll(ctx, keys.Queues(a.opt.Prefix)).Result()
	if err != nil {
		return fmt.Errorf("doctor: read the registry: %w", err)
	}
	a.registry = make(map[string]int, len(reg))
	for q, v := range reg {
		n, _ := strconv.Atoi(v)
		a.registry[q] = n
	}
	a.workers = map[string]bool{}
	err = a.zscan(ctx, keys.Workers(a.opt.Prefix), func(members []redis.Z) error {
		for _, z := range members {
			a.workers[z.Member.(string)] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("doctor: read the workers: %w", err)
	}
	a.byTag = map[string]*part{}
	a.foreign = map[string][]string{}
	if err := a.scanKeys(ctx); err != nil {
		return fmt.Errorf("doctor: scan the keys: %w", err)
	}
	for q, n := range a.registry {
		for i := range n {
			a.partition(q, i)
		}
	}
	sort.Slice(a.parts, func(i, j int) bool {
		if a.parts[i].queue != a.parts[j].queue {
			return a.parts[i].queue < a.parts[j].queue
		}
		return a.parts[i].n < a.parts[j].n
	})
	for _, p := range a.parts {
		sort.Slice(p.shards, func(i, j int) bool { return p.shards[i] < p.shards[j] })
	}
	return nil
}

// partition returns partition n of queue, adding it on first sight.
func (a *audit) partition(queue string, n int) *part {
	k := keys.For(a.opt.Prefix, queue, n)
	if p := a.byTag[k.T]; p != nil {
		return p
	}
	p := &part{queue: queue, n: n, k: k}
	a.byTag[k.T] = p
	a.parts = append(a.parts, p)
	return p
}

// where names partition p in examples.
func (p *part) where() string { return p.queue + "/" + strconv.Itoa(p.n) }
