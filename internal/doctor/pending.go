package doctor

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/wire"
)

// dummy is the item that wakes a blocked worker (lua/include/dummy.lua);
// every reader of a shard drops it.
const dummy = "\xc1shardq:dummy"

// entry is one task in a pending list: the list, the task's stored ID and
// its record's raw bytes ("" for none).
type entry struct {
	list, id, rec string
	hasRec        bool
}

// pendingLists returns the keys of every list of p that holds pending
// messages: the shards, the groups' lists and turns, 0.1.0's parked
// lists and the in-flight lists.
func (p *part) pendingLists() []string {
	out := make([]string, 0, len(p.shards)+len(p.lists)+len(p.flight))
	for _, s := range p.shards {
		out = append(out, p.k.ShardPrefix()+strconv.FormatInt(s, 10))
	}
	out = append(out, p.lists...)
	for _, w := range p.flight {
		out = append(out, p.k.Inflight(w))
	}
	return out
}

// pendingEntries reads every pending list of p in pages and calls fn with
// each page's tasks and, withRecords, their records, looked up in one
// HMGET a page.
func (a *audit) pendingEntries(ctx context.Context, p *part, withRecords bool, fn func([]entry) error) error {
	type cursor struct {
		key   string
		start int64
	}
	todo := make([]cursor, 0, len(p.pendingLists()))
	for _, k := range p.pendingLists() {
		todo = append(todo, cursor{key: k})
	}
	page := int64(a.opt.Page)
	for len(todo) > 0 {
		// one pipeline of LRANGEs, then one of HMGETs for what they read
		n := min(len(todo), a.opt.Pipeline)
		pl := a.rdb.Pipeline()
		cmds := make([]*redis.StringSliceCmd, n)
		for i := range n {
			cmds[i] = pl.LRange(ctx, todo[i].key, todo[i].start, todo[i].start+page-1)
		}
		if _, err := pl.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		var ents []entry
		var more []cursor
		for i, c := range cmds {
			items := c.Val()
			for _, m := range items {
				if m == dummy || strings.HasPrefix(m, "\x00") {
					continue
				}
				if id, ok := wire.HeadID(m); ok {
					ents = append(ents, entry{list: todo[i].key, id: id})
				}
			}
			if int64(len(items)) == page {
				more = append(more, cursor{key: todo[i].key, start: todo[i].start + page})
			}
		}
		todo = append(more, todo[n:]...)
		if withRecords {
			if err := a.records(ctx, p, ents); err != nil {
				return err
			}
		}
		if len(ents) > 0 {
			if err := fn(ents); err != nil {
				return err
			}
		}
	}
	return nil
}

// records fills in the records of ents from p's T:state, in pipelined
// HMGETs of at most opt.Page IDs.
func (a *audit) records(ctx context.Context, p *part, ents []entry) error {
	pl := a.pipe(ctx)
	for lo := 0; lo < len(ents); lo += a.opt.Page {
		chunk := ents[lo:min(lo+a.opt.Page, len(ents))]
		ids := make([]string, len(chunk))
		for i, e := range chunk {
			ids[i] = e.id
		}
		var cmd *redis.SliceCmd
		err := pl.add(func(pp redis.Pipeliner) { cmd = pp.HMGet(ctx, p.k.State(), ids...) }, func() {
			for i, v := range cmd.Val() {
				if s, ok := v.(string); ok {
					chunk[i].rec, chunk[i].hasRec = s, true
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return pl.flush()
}

// stateOf returns the state a raw record holds, or "" when it does not
// decode.
func stateOf(raw string) string {
	r, err := wire.DecodeRecord([]byte(raw))
	if err != nil {
		return ""
	}
	return r.State
}

// public returns the ID users see for a stored one.
func public(id string) string { return wire.PublicID(id) }
