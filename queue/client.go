package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/dicts"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/logging"
	"github.com/shardq/shardq/internal/protocol"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/route"
)

// Client enqueues tasks. It is safe for concurrent use. It uses the
// caller's Redis client (single node, Sentinel or Cluster) and never closes it.
type Client struct {
	rdb       redis.UniversalClient
	cfg       Config
	depth     sync.Map // queue name -> depthEntry: its MaxDepth and GroupMaxDepth, and when learned
	prepMu    sync.RWMutex
	prep      map[partKey]*plainCall // the plain single enqueue's call, per partition
	routes    *route.Table           // the queues' partition counts, registry entries and layouts
	lineDepth int64                  // lineDepth, but for tests
	inFlight  atomic.Int64           // single enqueues in flight (enqueue_send_coalesce.go)
	codec     *envelope.Codec        // compresses and encrypts payloads
	dicts     *dicts.Learner         // compression dictionaries per task type
	newID     func() string          // wire.NewID, but for the protocol's golden vectors
	gate      protocol.Gate          // the protocol check before the first write
}

// NewClient returns a Client over rdb.
func NewClient(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	if rcall.IsNil(rdb) {
		return nil, fmt.Errorf("%w: nil Redis client", errInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logging.RouteRedis()
	if cfg.WaitReplicas > 0 {
		if err := rcall.CheckWaitTimeout(rdb, cfg.WaitTimeout); err != nil {
			return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
		}
	}
	codec := cfg.codec()
	codec.Dicts = envelope.RedisDicts(rdb, cfg.Prefix)
	return &Client{rdb: rdb, cfg: cfg, lineDepth: lineDepth, codec: codec, dicts: dicts.New(rdb, cfg.Prefix, codec.Dicts, cfg.Logger),
		routes: route.New(cfg.Prefix, cfg.Partitions, cfg.Logger)}, nil
}

// Enqueue adds task in one Redis round trip and returns its info, once
// Redis has the task. opts override the task's own options. Concurrent
// calls to one partition beyond a few at once share round trips: they wait
// for a call in flight and go out together (see Config.NoCoalescing).
//
// A TaskID that another task holds is ErrDuplicateTaskID, returned with
// that task's info: its state, and its result while it is kept
// (Retention), so a caller that retries a request gets the answer of the
// first. A task no longer kept has its ID, queue and partition alone. The
// info is nil when reading it failed.
func (c *Client) Enqueue(ctx context.Context, task *Task, opts ...Option) (*TaskInfo, error) {
	b, buf := getBatch(), getMsgBuf()
	var err error
	if b.tasks[0], err = c.build(task, opts, c.headers(ctx), time.Now(), *buf); err != nil {
		putMsgBuf(buf, nil)
		putBatch(b)
		return nil, err
	}
	err = c.enqueue(ctx, b)
	info, terr := b.infos[0], b.errs[0]
	// a call given up on with ctx may still read the message and the batch
	if ctx.Err() == nil {
		putMsgBuf(buf, b.tasks[0].msg)
		putBatch(b)
	}
	switch {
	case err != nil:
		return nil, err
	case terr == nil, errors.Is(terr, ErrNotReplicated): // enqueued: its info is good
		return info, terr
	case errors.Is(terr, ErrDuplicateTaskID):
		return info, terr // the task that holds the ID
	}
	return nil, terr
}

// EnqueueMany adds tasks with one script call per queue partition, all in
// one round trip, and returns their infos in order. opts apply to every
// task, over its own options. Tasks that are invalid or rejected
// (duplicate ID, duplicate unique task) are reported in a *EnqueueError and
// leave no trace; the others are enqueued and their infos are non-nil. A
// duplicate ID's info is the task that holds the ID, as Enqueue returns
// it.
// Any other error (Redis down, the context done) means the outcome of the
// call is unknown: with TaskID, enqueueing again is safe.
func (c *Client) EnqueueMany(ctx context.Context, tasks []*Task, opts ...Option) ([]*TaskInfo, error) {
	b := &batch{tasks: make([]pending, len(tasks)), infos: make([]*TaskInfo, len(tasks)), errs: make([]error, len(tasks))}
	c.buildAll(b, tasks, opts, c.headers(ctx))
	if err := c.enqueue(ctx, b); err != nil {
		return nil, err
	}
	for _, err := range b.errs {
		if err != nil {
			return b.infos, &EnqueueError{Errs: b.errs}
		}
	}
	return b.infos, nil
}

// The enqueue pipeline. A task goes through four stages, each a function
// in a file of its own:
//
//	build  enqueue_build.go  task and options -> message, ID, route key
//	route  enqueue_route.go  -> partition; a group (one script call) per partition
//	admit  enqueue_admit.go  depth limits checked by the call; WaitForRoom
//	send   enqueue_send.go   one round trip for every group's call
//
// Enqueue and EnqueueMany build, then enqueue runs the other three. The
// special cases are options of a stage: the single Enqueue's own script,
// its tail shard guess and the sharing of round trips by concurrent calls
// are send's (group.single), as are WaitReplicas and retrying what Redis
// refused unrun; a closed partition's tasks are routed again.

// batch is one call's tasks on their way through the pipeline, and their
// outcomes, by index.
type batch struct {
	tasks  []pending // built; those whose errs[i] is set are not sent
	infos  []*TaskInfo
	errs   []error
	single bool // a single Enqueue's: route may mark its group single
	// one and ones hold the group of a batch of one partition, so a
	// single Enqueue's batch, pooled, routes without allocating
	one  group
	ones [1]*group
}

// enqueue runs route, admit and send over b's built tasks, then reads the
// tasks that hold the IDs of duplicates. It returns the error that left
// the outcome unknown; the tasks' own are in b.errs.
func (c *Client) enqueue(ctx context.Context, b *batch) error {
	if i := slices.Index(b.errs, nil); i >= 0 && !c.gate.Passed() {
		if err := redisError(c.gate.Pass(ctx, c.rdb, c.cfg.Prefix)); err != nil {
			return fmt.Errorf("enqueue %q: %w", b.tasks[i].info.Queue, err)
		}
	}
	// the layouts of queues this client would route by guess
	if unread := c.guessed(b); unread != nil {
		if err := c.routes.Read(ctx, c.rdb, unread); err != nil {
			return err
		}
	}
	if err := c.deliver(ctx, c.route(b), b); err != nil {
		return err
	}
	c.existing(ctx, b)
	return nil
}

// guessed returns the queues of b's built tasks whose route this client
// would guess (route.Table.Guessing), once each: nil, allocating nothing,
// when there are none, as in nearly every call.
func (c *Client) guessed(b *batch) []string {
	var unread []string
	for i := range b.tasks { // by index: a pending is too big to copy; info is nil if errs[i] is set
		if t := b.tasks[i].info; b.errs[i] == nil && c.routes.Guessing(t.Queue) && !slices.Contains(unread, t.Queue) {
			unread = append(unread, t.Queue)
		}
	}
	return unread
}

// deliver admits and sends routed groups, then routes again and sends
// what closed partitions refused (reroute).
func (c *Client) deliver(ctx context.Context, groups []*group, b *batch) error {
	for try := 1; len(groups) > 0; try++ {
		if err := c.admit(ctx, groups, b); err != nil {
			return err
		}
		groups = c.reroute(ctx, try, groups, b.errs)
	}
	return nil
}

// batches holds single Enqueues' batches, of one task.
var batches = sync.Pool{New: func() any {
	return &batch{tasks: make([]pending, 1), infos: make([]*TaskInfo, 1), errs: make([]error, 1), single: true}
}}

// getBatch returns an empty batch of one task.
func getBatch() *batch { return batches.Get().(*batch) }

// putBatch empties b, so the pool keeps no task alive, and pools it.
func putBatch(b *batch) {
	b.tasks[0], b.infos[0], b.errs[0] = pending{}, nil, nil
	b.one, b.ones[0] = group{}, nil
	batches.Put(b)
}
