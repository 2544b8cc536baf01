// Package home moves workflows' bookkeeping (batches and chains among
// them) between queue partitions and the homes that hold workflows'
// records: it forwards the outcome notifications that ack and fail
// scripts write (T:notify) to their homes (home_notify.lua), and
// delivers the homes' outboxes (H:out) into queue partitions. The queue
// package's Client and the worker's sweep both use it. It also holds the
// node names of a batch's shape (batch.go).
package home

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/layout"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// Env is what delivery and forwarding need to know.
type Env struct {
	RDB       redis.UniversalClient
	Prefix    string
	ShardSize int
	FeedSize  int
	IDTTL     time.Duration
	// Now returns the time scripts use ("" = the Redis server's clock).
	Now func() string
}

// MaxStep bounds the entries one home or list gives per call.
const MaxStep = 500

func (e *Env) now() string {
	if e.Now == nil {
		return ""
	}
	return e.Now()
}

// delivered is one outbox entry read from a home.
type delivered struct {
	home int
	id   string
	d    *wire.Delivery // nil: gone or undecodable, only to remove
}

// Deliver enqueues the due entries of the given homes' outboxes into their
// queue partitions, then removes them from the outboxes. Each task is
// enqueued under its fixed ID with an ID claim, so an entry delivered twice
// (a crash before the removal, two sweepers at once) is enqueued once. It
// returns how many entries it delivered; an error leaves the entries for
// the next try. Each step is one round trip, and an empty one none.
func (e *Env) Deliver(ctx context.Context, homes []int) (int, error) {
	cmds := make([]*redis.Cmd, len(homes))
	err := rcall.Pipelined(ctx, e.RDB, func(p *rcall.Pipe) error {
		for i, n := range homes {
			h := keys.Home(e.Prefix, n)
			cmds[i] = p.Run(ctx, script.HomeOutDue, []string{h.Out(), h.OutMsg()}, e.now(), MaxStep)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read flow outboxes: %w", err)
	}
	var all []delivered
	for i, cmd := range cmds {
		vals, err := cmd.Slice()
		if err != nil {
			return 0, fmt.Errorf("read flow outbox %d: %w", homes[i], err)
		}
		for j := 0; j+1 < len(vals); j += 2 {
			id, _ := vals[j].(string)
			s, _ := vals[j+1].(string)
			d, _ := wire.DecodeDelivery([]byte(s)) // gone or undecodable: nil, only removed
			all = append(all, delivered{home: homes[i], id: id, d: d})
		}
	}
	return len(all), e.deliver(ctx, all)
}

// DeliverEntries delivers outbox entries of home that the caller itself
// just put there (a batch's new members, a chain's first link), without
// waiting for them to be due, then removes them.
func (e *Env) DeliverEntries(ctx context.Context, home int, ds []*wire.Delivery) error {
	all := make([]delivered, len(ds))
	for i, d := range ds {
		all[i] = delivered{home: home, id: d.ID, d: d}
	}
	return e.deliver(ctx, all)
}

// deliver sends the deliveries, one enqueue call per queue partition, in
// one round trip, then removes them from their outboxes. A duplicate ID
// means an earlier delivery ran: success. Deliveries a closed partition
// refused (its queue's partition count was lowered since they were
// built) are routed by the queue's layout and sent once more; refused
// again, they stay in the outbox for the next sweep.
func (e *Env) deliver(ctx context.Context, all []delivered) error {
	closed, err := e.enqueueOnce(ctx, all)
	if err == nil && len(closed) > 0 {
		if err = e.reroute(ctx, closed); err == nil {
			closed, err = e.enqueueOnce(ctx, closed)
		}
	}
	switch {
	case err != nil:
		return err
	case len(closed) > 0:
		return fmt.Errorf("deliver flow tasks: %d refused by closed partitions, kept for the next sweep", len(closed))
	}
	return e.remove(ctx, all)
}

// reroute moves deliveries to a partition their queue's layout routes to
// now, placed by their chosen ID (or group) as a producer would.
func (e *Env) reroute(ctx context.Context, closed []delivered) error {
	var queues []string
	for _, x := range closed {
		if !slices.Contains(queues, x.d.Queue) {
			queues = append(queues, x.d.Queue)
		}
	}
	vals, err := e.RDB.HMGet(ctx, keys.Layout(e.Prefix), queues...).Result()
	if err != nil {
		return fmt.Errorf("deliver flow tasks: read partition layouts: %w", err)
	}
	for j, q := range queues {
		v, _ := vals[j].(string)
		l, err := layout.Parse(v)
		if err != nil {
			continue // no layout: the partition will open again, or an operator acts
		}
		for _, x := range closed {
			if x.d.Queue != q || x.d.Partition < l.Route {
				continue
			}
			key := x.d.ID
			if m, err := wire.DecodeMessage(x.d.Msg); err == nil && m.Key != "" {
				key = m.Key
			}
			x.d.Partition, x.d.Partitions = layout.Pick(key, l.Route), l.Route
		}
	}
	return nil
}

// enqueueOnce is one round trip of deliver; it returns the deliveries
// that closed partitions refused.
func (e *Env) enqueueOnce(ctx context.Context, all []delivered) ([]delivered, error) {
	type group struct {
		k       keys.Partition
		args    []any
		members []delivered
	}
	var order []*group
	byKey := map[keys.Partition]*group{}
	queues := map[string]any{} // queue -> partitions, for the registry
	for _, x := range all {
		if x.d == nil {
			continue
		}
		k := keys.For(e.Prefix, x.d.Queue, x.d.Partition)
		g := byKey[k]
		if g == nil {
			g = &group{k: k, args: []any{k.T, e.now(), e.ShardSize, e.FeedSize, 7}}
			byKey[k] = g
			order = append(order, g)
		}
		g.args = append(g.args, x.d.Msg, x.d.ID, x.d.At, x.d.In, x.d.Unique, x.d.UniqueTTL, e.IDTTL.Milliseconds())
		g.members = append(g.members, x)
		queues[x.d.Queue] = max(1, x.d.Partitions)
	}
	if len(order) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.Cmd, len(order))
	err := rcall.Pipelined(ctx, e.RDB, func(p *rcall.Pipe) error {
		p.HSet(ctx, keys.Queues(e.Prefix), queues)
		for i, g := range order {
			k := g.k
			cmds[i] = p.Run(ctx, script.Enqueue, []string{k.First(), k.Last(), k.Feed(), keys.RankKey(k.Feed()), k.FeedMsg(), k.Scheduled(), k.Msg(), k.State(), k.Guard()}, g.args...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deliver flow tasks: %w", err)
	}
	var closed []delivered
	for i, c := range cmds {
		replies, err := c.Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("deliver flow tasks: %w", err)
		}
		if slices.Contains(replies, codes.EnqClosed) {
			closed = append(closed, order[i].members...)
		}
	}
	return closed, nil
}

// remove deletes delivered entries from their outboxes.
func (e *Env) remove(ctx context.Context, all []delivered) error {
	byHome := map[int][]string{}
	for _, x := range all {
		byHome[x.home] = append(byHome[x.home], x.id)
	}
	_, err := e.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, ids := range byHome {
			h := keys.Home(e.Prefix, n)
			p.ZRem(ctx, h.Out(), ids) // go-redis spreads a []string
			p.HDel(ctx, h.OutMsg(), ids...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove delivered flow tasks: %w", err)
	}
	return nil
}

// Forward moves the notifications waiting in the given T:notify lists to
// their homes: one home_notify call per home, all in one round trip, then,
// once the homes answered, the forwarded entries leave their lists (LREM by
// value, so concurrent forwarders never remove what they did not forward;
// a crash in between forwards them again, which changes nothing). It
// returns how many entries it read and the homes whose outboxes have
// entries due.
func (e *Env) Forward(ctx context.Context, lists []string) (int, []int, error) {
	reads := make([]*redis.StringSliceCmd, len(lists))
	_, err := e.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range lists {
			reads[i] = p.LRange(ctx, l, 0, MaxStep-1)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("read flow notifications: %w", err)
	}
	notes := map[int][]any{} // home -> notifications
	seen := map[string]bool{}
	type entry struct {
		list, val string
		home      int // -1: names no home, only to remove
	}
	var entries []entry
	for i, r := range reads {
		for _, v := range r.Val() {
			home := -1
			if n, err := wire.DecodeFlowNote([]byte(v)); err == nil {
				if ref, err := wire.ParseFlowRef(n.Ref); err == nil && ref.Home >= 0 && ref.Home < keys.FlowPartitions {
					home = ref.Home
				}
			}
			entries = append(entries, entry{lists[i], v, home})
			if home >= 0 && !seen[v] {
				seen[v] = true
				notes[home] = append(notes[home], v)
			}
		}
	}
	calls := make([]notifyCall, 0, len(notes))
	for n, vs := range notes {
		calls = append(calls, notifyCall{home: n, notes: vs})
	}
	var due []int
	var first error
	failed := map[int]bool{}
	var alone []notifyCall
	for _, c := range e.notify(ctx, calls, &due) {
		if c.err == nil {
			continue
		}
		failed[c.home] = true
		if rcall.IsScriptError(c.err) && len(c.notes) > 1 {
			for _, v := range c.notes {
				alone = append(alone, notifyCall{home: c.home, notes: []any{v}})
			}
		}
		first = cmp.Or(first, fmt.Errorf("forward flow notifications to home %d: %w", c.home, c.err))
	}
	// a call that stopped at a script error stopped at one notification,
	// and the others of its home must not wait for it: each is applied
	// alone. A notification applied twice changes nothing, so those the
	// call applied before it stopped are safe to apply again; one that
	// fails alone stays in its list, to be tried again at the next forward.
	applied := map[string]bool{}
	for _, c := range e.notify(ctx, alone, &due) {
		if c.err != nil {
			first = cmp.Or(first, fmt.Errorf("forward a flow notification to home %d: %w", c.home, c.err))
			continue
		}
		applied[c.notes[0].(string)] = true
	}
	_, err = e.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, x := range entries {
			if x.home < 0 || !failed[x.home] || applied[x.val] {
				p.LRem(ctx, x.list, 1, x.val)
			}
		}
		return nil
	})
	if err != nil {
		return 0, due, fmt.Errorf("remove forwarded flow notifications: %w", err)
	}
	return len(entries), due, first
}

// notifyCall is one home_notify call: its home, its notifications and,
// once it ran, its error.
type notifyCall struct {
	home  int
	notes []any
	err   error
}

// notify runs calls in one round trip and reads each reply, {state
// changes, entries due}, on its own: one that failed holds back neither
// the others nor the removal of what they applied. It adds to due the
// homes whose outboxes have entries due.
func (e *Env) notify(ctx context.Context, calls []notifyCall, due *[]int) []notifyCall {
	cmds := make([]*redis.Cmd, len(calls))
	_ = rcall.Pipelined(ctx, e.RDB, func(p *rcall.Pipe) error {
		for i, c := range calls {
			h := keys.Home(e.Prefix, c.home)
			cmds[i] = p.Run(ctx, script.HomeNotify, []string{h.Out()}, append([]any{h.H, e.now()}, c.notes...)...)
		}
		return nil
	})
	for i, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err == nil && len(res) != 2 {
			err = fmt.Errorf("home_notify answered %d values, want 2", len(res))
		}
		calls[i].err = err
		if err == nil && res[1] > 0 && !slices.Contains(*due, calls[i].home) {
			*due = append(*due, calls[i].home)
		}
	}
	return calls
}
