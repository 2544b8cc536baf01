package queue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/logging"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/wire"
)

// Client enqueues tasks. It is safe for concurrent use. It uses the
// caller's Redis client (single node, Sentinel or Cluster) and never closes it.
type Client struct {
	rdb        redis.UniversalClient
	cfg        Config
	rr         atomic.Uint64 // round-robin over partitions
	registered sync.Map      // queue name -> registration: partitions recorded in the registry, and when
	depth      sync.Map      // queue name -> depthEntry: its MaxDepth and KeyMaxDepth, and when learned
	prepMu     sync.RWMutex
	prep       map[partKey]*plainCall // the plain single enqueue's call, per partition
	layouts    sync.Map               // queue name -> layoutEntry: its partition layout, and when read
	lineDepth  int64                  // lineDepth, but for tests
	inFlight   atomic.Int64           // single enqueues in flight (coalesce.go)
	codec      *envelope.Codec        // compresses and encrypts payloads
	dicts      *learner               // compression dictionaries per task type
}

// NewClient returns a Client over rdb.
func NewClient(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	if rcall.IsNil(rdb) {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logging.RouteRedis()
	if cfg.WaitReplicas > 0 {
		if err := rcall.CheckWaitTimeout(rdb, cfg.WaitTimeout); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	codec := cfg.codec()
	codec.Dicts = envelope.RedisDicts(rdb, cfg.Prefix)
	return &Client{rdb: rdb, cfg: cfg, lineDepth: lineDepth, codec: codec, dicts: newLearner(rdb, cfg.Prefix, codec.Dicts, cfg.Logger)}, nil
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
	var ctxHeaders map[string]string
	if c.cfg.ContextHeaders != nil {
		ctxHeaders = c.cfg.ContextHeaders(ctx)
	}
	buf := getMsgBuf()
	p, err := c.build(task, opts, ctxHeaders, time.Now(), *buf)
	if err != nil {
		putMsgBuf(buf, nil)
		return nil, err
	}
	// the common case takes the short path: a plain task, no replicas to
	// wait for, a queue known to have no MaxDepth, to be registered, and
	// whose partition layout was read within layoutRefresh
	if p.plain() && !p.wait && c.cfg.WaitReplicas == 0 && !c.capped(p.info.Queue) && c.isRegistered(p.info.Queue) &&
		!c.layoutStale(p.info.Queue) {
		info, refused, inFlight, err := c.sendPlain(ctx, &p)
		if !refused {
			if !inFlight {
				putMsgBuf(buf, p.msg)
			}
			return info, err
		}
		// refused unrun (a slot migrating, a failover) or by a draining
		// partition: the general path retries and routes again
	}
	// The general path sends the task as built, its partition already
	// taken from the round-robin (building it again would take a second
	// turn, and skew the spread of a queue's tasks over its partitions).
	// Its buffer goes back to the pool unless the call was given up on
	// with ctx (then it may still be reading it).
	ps := []pending{p}
	infos, errs, err := c.sendGroup(ctx, ps)
	if ctx.Err() == nil {
		putMsgBuf(buf, p.msg)
	}
	if err != nil {
		return nil, err
	}
	if errs[0] != nil {
		switch {
		case errors.Is(errs[0], ErrNotReplicated):
			return infos[0], errs[0] // enqueued: its info is good
		case errors.Is(errs[0], ErrDuplicateTaskID):
			c.existing(ctx, ps, infos, errs)
			return infos[0], errs[0] // the task that holds the ID
		}
		return nil, errs[0]
	}
	return infos[0], nil
}

// sendGroup sends tasks of one partition, built, by the general path, as
// EnqueueMany sends a group: one script call (retried while refused),
// waiting for room where a task asks to, then to other partitions if the
// partition is closed. It returns each task's info or error, or the error
// that left the outcome unknown.
func (c *Client) sendGroup(ctx context.Context, ps []pending) ([]*TaskInfo, []error, error) {
	g := &group{queue: ps[0].info.Queue, partition: ps[0].info.Partition, tasks: ps}
	for i := range g.tasks {
		g.tasks[i].index = i
	}
	infos, errs := make([]*TaskInfo, len(ps)), make([]error, len(ps))
	groups := []*group{g}
	if err := c.send(ctx, groups, infos, errs); err != nil {
		return nil, nil, err
	}
	c.waitForRoom(ctx, groups, infos, errs)
	if err := c.reroute(ctx, groups, infos, errs); err != nil {
		return nil, nil, err
	}
	return infos, errs, nil
}

// EnqueueMany adds tasks with one script call per queue partition, all in
// one round trip, and returns their infos in order. opts apply to every
// task, over its own options. Tasks that are invalid or rejected
// (duplicate ID, duplicate unique task) are reported in a *EnqueueError and
// leave no trace; the others are enqueued and their infos are non-nil. A
// duplicate ID's info is the task that holds the ID, as Enqueue returns
// it.
// Any other error (Redis down, the context done) means the outcome of the
// batch is unknown: with TaskID, enqueueing again is safe.
func (c *Client) EnqueueMany(ctx context.Context, tasks []*Task, opts ...Option) ([]*TaskInfo, error) {
	infos := make([]*TaskInfo, len(tasks))
	errs := make([]error, len(tasks))
	var ctxHeaders map[string]string
	if c.cfg.ContextHeaders != nil {
		ctxHeaders = c.cfg.ContextHeaders(ctx)
	}
	groups, failed := c.prepare(tasks, opts, ctxHeaders, infos, errs)
	if len(groups) > 0 {
		if err := c.send(ctx, groups, infos, errs); err != nil {
			return nil, err
		}
		c.waitForRoom(ctx, groups, infos, errs)
		if err := c.reroute(ctx, groups, infos, errs); err != nil {
			return nil, err
		}
		var sent []pending
		for _, g := range groups {
			sent = append(sent, g.tasks...)
		}
		c.existing(ctx, sent, infos, errs)
	}
	for _, err := range errs {
		if err != nil {
			failed = true
		}
	}
	if failed {
		return infos, &EnqueueError{Errs: errs}
	}
	return infos, nil
}

// pending is one task ready to send.
type pending struct {
	index   int
	info    *TaskInfo
	msg     []byte
	id      string    // stored form (info.ID is the public one)
	at      int64     // unix ms, 0 = none
	in      int64     // ms, 0 = none
	due     time.Time // when a scheduled task is due, by this client's clock
	unique  string
	uttl    int64
	idClaim int64
	wait    bool   // WaitForRoom: a full queue is waited for, not an error
	route   string // what picks its partition by hash ("" = round-robin)
}

// group is the tasks of one queue partition: one script call.
type group struct {
	queue     string
	partition int
	tasks     []pending
	capped    bool  // sent with enqueue_capped.lua
	max       int64 // the queue's MaxDepth, when capped
	keyMax    int64 // its KeyMaxDepth, when capped
}

// prepare validates and encodes every task, grouping them by partition.
func (c *Client) prepare(tasks []*Task, opts []Option, ctxHeaders map[string]string, infos []*TaskInfo, errs []error) ([]*group, bool) {
	byKey := map[keys.Partition]*group{}
	var order []*group
	failed := false
	built := c.buildAll(tasks, opts, ctxHeaders, errs)
	for i := range tasks {
		if errs[i] != nil {
			failed = true
			continue
		}
		p := built[i]
		p.index = i
		k := keys.For(c.cfg.Prefix, p.info.Queue, p.info.Partition)
		g := byKey[k]
		if g == nil {
			g = &group{queue: p.info.Queue, partition: p.info.Partition}
			byKey[k] = g
			order = append(order, g)
		}
		g.tasks = append(g.tasks, p)
	}
	return order, failed
}

// parallelBuild is the least batch whose tasks buildAll builds on several
// goroutines.
const parallelBuild = 128

// buildAll builds every task, its error in errs. A large batch is built
// on GOMAXPROCS goroutines: compressing and encrypting cost the producer
// CPU per task, and the batch's round trip waits for all of them.
func (c *Client) buildAll(tasks []*Task, opts []Option, ctxHeaders map[string]string, errs []error) []pending {
	now := time.Now()
	built := make([]pending, len(tasks))
	run := func(from, to int) {
		for i := from; i < to; i++ {
			built[i], errs[i] = c.build(tasks[i], opts, ctxHeaders, now, nil)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	if len(tasks) < parallelBuild || procs == 1 {
		run(0, len(tasks))
		return built
	}
	var wg sync.WaitGroup
	step := (len(tasks) + procs - 1) / procs
	for from := 0; from < len(tasks); from += step {
		wg.Go(func() { run(from, min(from+step, len(tasks))) })
	}
	wg.Wait()
	return built
}

// build validates one task and encodes its message.
// buf, when not nil, is where the message is encoded (reused storage).
func (c *Client) build(t *Task, callOpts []Option, ctxHeaders map[string]string, now time.Time, buf []byte) (pending, error) {
	if t == nil {
		return pending{}, fmt.Errorf("%w: nil task", ErrInvalidTask)
	}
	if err := checkType(t.typ); err != nil {
		return pending{}, err
	}
	if len(t.payload) > c.cfg.MaxPayloadSize {
		return pending{}, fmt.Errorf("%w: task %q payload is %d bytes, limit %d", ErrPayloadTooLarge, t.typ, len(t.payload), c.cfg.MaxPayloadSize)
	}
	o, err := resolveOptions(t.opts, callOpts)
	if err != nil {
		return pending{}, err
	}
	m := wire.Message{
		ID: wire.StoredID(o.taskID), Key: o.key, Type: t.typ, Payload: t.payload, Raw: t.raw, MaxRetry: o.maxRetry,
		Timeout: o.timeout.Milliseconds(), Retention: o.retention.Milliseconds(), EnqueuedAt: now.UnixMilli(),
		Flow: o.flow,
	}
	if len(ctxHeaders) > 0 {
		m.Headers = make(map[string]string, len(ctxHeaders)+len(o.headers))
		for k, v := range ctxHeaders {
			if k != "" && v != "" {
				m.Headers[k] = v
			}
		}
	}
	for k, v := range o.headers {
		if m.Headers == nil {
			m.Headers = make(map[string]string, len(o.headers))
		}
		m.Headers[k] = v
	}
	p := pending{wait: o.waitRoom}
	if m.ID == "" {
		m.ID = wire.NewID()
		// the ID's own millisecond: then the message need not carry it
		m.EnqueuedAt, _ = wire.IDTime(m.ID)
	} else {
		p.idClaim = c.cfg.IDTTL.Milliseconds()
	}
	if !o.deadline.IsZero() {
		m.Deadline = o.deadline.UnixMilli()
	}
	if o.unique > 0 || o.untilFinished {
		m.Unique = o.uniqueKey
		if m.Unique == "" {
			sum := sha1.Sum(t.payload)
			m.Unique = t.typ + ":" + hex.EncodeToString(sum[:])
		}
		p.unique, p.uttl = m.Unique, o.unique.Milliseconds()
		if o.untilFinished {
			// < 0: until it finishes, then -uttl - 1 ms (lua/include/unique.lua)
			p.uttl = -o.uniqueAfter.Milliseconds() - 1
		}
	}
	if !o.processAt.IsZero() {
		p.at = o.processAt.UnixMilli()
		p.due = o.processAt
	}
	if p.in = o.processIn.Milliseconds(); p.in > 0 {
		// Redis times the delay by its own clock; this is the client's
		// reading of the same moment, for the returned TaskInfo only.
		p.due = now.Add(o.processIn).Round(0) // wall clock only, as GetTask reports
	}
	p.route = routeKey(m.ID, m.Key, m.Unique, p.idClaim > 0)
	p.info = newTaskInfo(o.queue, c.partitionFor(o.queue, p.route), &m, nil)
	p.id = m.ID
	if need := 8 + len(m.ID) + len(m.Type) + c.codec.MaxSize(len(m.Payload)); cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	var dict *envelope.Dict
	if c.cfg.Compression == CompressFast && c.cfg.KeyRing == nil && len(m.Payload) >= c.cfg.CompressAbove && len(m.Payload) <= dictMaxPayload {
		dict = c.dicts.dict(t.typ, m.Payload)
	}
	if head, ok := m.AppendCompactHead(buf[:0], c.cfg.FullMessages); ok {
		// the compact form ends with the payload: wrap it in place, one
		// buffer per task
		if p.msg, err = c.codec.WrapDict(head, m.Payload, dict, m.ID, envelope.Payload); err != nil {
			return pending{}, fmt.Errorf("queue: task %q: %w", t.typ, err)
		}
		return p, nil
	}
	if m.Payload, err = c.codec.WrapDict(nil, m.Payload, dict, m.ID, envelope.Payload); err != nil {
		return pending{}, fmt.Errorf("queue: task %q: %w", t.typ, err)
	}
	p.msg = m.AppendEncode(buf[:0], c.cfg.FullMessages)
	return p, nil
}

// routeKey is what places a task by hash: its concurrency key when it
// has one, so every task of a key meets the key's limit in one partition;
// else its unique key or chosen ID, so duplicates meet in one script;
// "" (round-robin) otherwise.
func routeKey(id, concKey, unique string, chosenID bool) string {
	switch {
	case concKey != "":
		return concKey
	case unique != "":
		return unique
	case chosenID:
		return id
	}
	return ""
}

// partitionFor picks a partition of queue for a task placed by key
// (routeKey), among the partitions producers route to now (routeCount).
func (c *Client) partitionFor(queue, key string) int {
	n := c.routeCount(queue)
	if n == 1 {
		return 0
	}
	if key == "" {
		return int(c.rr.Add(1) % uint64(n))
	}
	return layout.Pick(key, n)
}

// send runs one enqueue script per group, in one pipeline, bounded by ctx.
// Groups Redis refused without running them (TRYAGAIN while their slot
// migrates, CLUSTERDOWN during a failover) are sent again, with a growing
// wait, for up to refusedPatience; a group whose reply was lost is never
// resent.
func (c *Client) send(ctx context.Context, groups []*group, infos []*TaskInfo, errs []error) error {
	if c.cfg.WaitReplicas > 0 {
		return c.sendReplicated(ctx, groups, infos, errs)
	}
	giveUp := time.Now().Add(refusedPatience)
	for attempt := 1; ; attempt++ {
		refused, err := c.sendOnce(ctx, groups, infos, errs)
		if err == nil || len(refused) == 0 || !time.Now().Before(giveUp) {
			return err
		}
		if serr := rcall.Sleep(ctx, min(time.Duration(attempt)*refusedWait, refusedMaxWait)); serr != nil {
			return err
		}
		groups = refused
	}
}

// refusedPatience bounds how long send retries the groups Redis refused,
// waiting refusedWait more before each try, at most refusedMaxWait. A
// partition's scripts are refused for as long as its slot migrates (they
// declare T:guard, which never exists: keys.Partition.Guard), so this is
// how long a move may take before producers see TRYAGAIN.
const (
	refusedPatience = 5 * time.Second
	refusedMaxWait  = 500 * time.Millisecond
	refusedWait     = 50 * time.Millisecond
)

// sendOnce is one round trip of send. When it fails and every failed
// group was refused unrun (rcall.IsRefused), it returns those groups, the
// others' results collected.
func (c *Client) sendOnce(ctx context.Context, groups []*group, infos []*TaskInfo, errs []error) ([]*group, error) {
	cmds := make([]*redis.Cmd, len(groups))
	var fresh map[string]int
	var learn func()
	err := rcall.Do(ctx, c.rdb, func() error {
		if len(groups) == 1 && c.isRegistered(groups[0].queue) && !c.layoutStale(groups[0].queue) {
			// the common single call: a plain EVALSHA, no pipeline to build
			k := keys.For(c.cfg.Prefix, groups[0].queue, groups[0].partition)
			script, args := c.enqueueScript(k, groups[0])
			cmds[0] = script.Run(ctx, c.rdb, enqueueKeys(k), args...)
			return cmds[0].Err()
		}
		return rcall.Pipelined(ctx, c.rdb, func(p *rcall.Pipe) error {
			fresh = c.register(ctx, p, groups)
			learn = c.learnLayouts(ctx, p, groups)
			for i, g := range groups {
				k := keys.For(c.cfg.Prefix, g.queue, g.partition)
				script, args := c.enqueueScript(k, g)
				cmds[i] = p.Run(ctx, script, enqueueKeys(k), args...)
			}
			return nil
		})
	})
	if err != nil {
		rcall.Reroute(c.rdb, err) // a cluster's slot map may be stale
		err = fmt.Errorf("enqueue %q: %w", groups[0].queue, redisError(err))
		if ctx.Err() != nil {
			return nil, err // the call may still be running: cmds are its
		}
		return c.splitRefused(groups, cmds, infos, errs, err)
	}
	for q, n := range fresh {
		c.registered.Store(q, registration{n: n, at: time.Now()})
	}
	if learn != nil {
		learn()
	}
	for i, g := range groups {
		if err := c.collect(g, cmds[i], infos, errs); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// splitRefused sorts the groups of a failed round trip: the results of
// those that ran are collected, those Redis refused unrun are returned for
// another try. When any other failed (its outcome unknown), it returns
// none and err.
func (c *Client) splitRefused(groups []*group, cmds []*redis.Cmd, infos []*TaskInfo, errs []error, err error) ([]*group, error) {
	var refused []*group
	for i, cmd := range cmds {
		switch {
		case cmd == nil:
			return nil, err
		case rcall.IsRefused(cmd.Err()):
			refused = append(refused, groups[i])
		case cmd.Err() != nil:
			return nil, err
		}
	}
	for i, g := range groups {
		if cmds[i].Err() == nil {
			if cerr := c.collect(g, cmds[i], infos, errs); cerr != nil {
				return nil, cerr
			}
		}
	}
	return refused, err
}

// collect reads the reply of g's enqueue script into infos and errs.
func (c *Client) collect(g *group, cmd *redis.Cmd, infos []*TaskInfo, errs []error) error {
	replies, err := cmd.Int64Slice()
	if err == nil {
		replies, err = c.learnDepth(g, replies)
	}
	if err != nil {
		return fmt.Errorf("enqueue %q: %w", g.queue, err)
	}
	for j, p := range g.tasks {
		switch replies[j] {
		case codes.EnqPending:
			infos[p.index] = p.info
		case codes.EnqScheduled:
			p.info.State, p.info.NextProcessAt = StateScheduled, p.due
			infos[p.index] = p.info
		case codes.EnqDuplicateID:
			errs[p.index] = fmt.Errorf("%w: %q in queue %q", ErrDuplicateTaskID, p.info.ID, g.queue)
		case codes.EnqDuplicateUnique:
			errs[p.index] = fmt.Errorf("%w: key %q in queue %q", ErrDuplicateUniqueTask, p.unique, g.queue)
		case codes.EnqQueueFull:
			errs[p.index] = g.queueFull()
		case codes.EnqKeyFull:
			errs[p.index] = g.keyFull(p.info.ConcurrencyKey)
		case codes.EnqClosed:
			errs[p.index] = fmt.Errorf("%w: partition %d of queue %q", ErrPartitionClosed, g.partition, g.queue)
		}
	}
	return nil
}

// enqueueKeys returns the KEYS of enqueue.lua for partition k.
func enqueueKeys(k keys.Partition) []string {
	return []string{k.First(), k.Last(), k.Feed(), keys.RankKey(k.Feed()), k.FeedMsg(), k.Scheduled(), k.Msg(), k.State(), k.Guard()}
}

// isRegistered reports whether queue's registry entry was written by this client.
func (c *Client) isRegistered(queue string) bool {
	v, ok := c.registered.Load(queue)
	if !ok {
		return false
	}
	r := v.(registration)
	return r.n == c.routeCount(queue) && time.Since(r.at) < registryRefresh
}

// registration is a queue's registry entry as this client wrote it.
type registration struct {
	n  int
	at time.Time
}

// registryRefresh is how often a client writes a queue's registry entry
// again as it enqueues: a queue deleted (Inspector.DeleteQueue) while a
// producer still feeds it comes back to the queue list within it.
const registryRefresh = time.Minute

// plain reports whether the task takes the script's short layout: pending
// now, a generated ID, not unique.
func (p *pending) plain() bool {
	return p.at == 0 && p.in == 0 && p.unique == "" && p.idClaim == 0
}

func (c *Client) enqueueArgs(k keys.Partition, g *group) []any {
	plain := true
	for i := range g.tasks {
		if !g.tasks[i].plain() {
			plain = false
			break
		}
	}
	if plain {
		// the script's short layout: two fields per task
		args := make([]any, 0, 5+2*len(g.tasks))
		args = append(args, k.T, "", c.cfg.ShardSize, c.cfg.FeedSize, 2)
		for _, p := range g.tasks {
			args = append(args, p.msg, p.id)
		}
		return args
	}
	args := make([]any, 0, 5+7*len(g.tasks))
	args = append(args, k.T, "", c.cfg.ShardSize, c.cfg.FeedSize, 7)
	for _, p := range g.tasks {
		args = append(args, p.msg, p.id, p.at, p.in, p.unique, p.uttl, p.idClaim)
	}
	return args
}

// register records each queue and its partition count in the registry,
// riding in the same pipeline as the enqueue, until one write succeeded in
// this process. It returns what it wrote, to remember once sent.
func (c *Client) register(ctx context.Context, p *rcall.Pipe, groups []*group) map[string]int {
	var fresh map[string]int
	for _, g := range groups {
		n := c.routeCount(g.queue)
		if c.isRegistered(g.queue) {
			continue
		}
		if fresh == nil {
			fresh = map[string]int{}
		}
		if _, ok := fresh[g.queue]; !ok {
			p.HSet(ctx, keys.Queues(c.cfg.Prefix), g.queue, n)
			fresh[g.queue] = n
		}
	}
	return fresh
}
