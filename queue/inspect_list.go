package queue

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// stateRecent is not a state a task is ever in: a TaskQuery without a
// State lists the feed of recently enqueued tasks, whatever their state
// now, and its markers name it so.
const stateRecent State = "recent"

// defaultPageSize is the page size of a TaskQuery without a Limit.
const defaultPageSize = 50

// maxPageSize bounds TaskQuery.Limit and GroupQuery.Limit.
const maxPageSize = inspect.MaxPageSize

// TaskQuery selects a page of a queue's tasks in one state.
type TaskQuery struct {
	Queue string
	// State is StatePending, StateActive, StateScheduled, StateRetry,
	// StateDead or StateSucceeded; empty lists the feed of recently enqueued
	// tasks, whatever their state now.
	State State
	// After is the marker: the Next of the previous page ("" = from the
	// start). Markers are opaque and belong to one state and order.
	After string
	// Limit bounds the page. Defaults to 50, at most 1,000.
	Limit int
	// Newest pages from the other end: newest first for the feeds (recent,
	// done, dead), latest lease or due time first for active, scheduled
	// and retry. Pending tasks page from the head (next to run) only.
	Newest bool

	// Filters: with any of Type, Error, IDPrefix and Group set, ListTasks keeps
	// the tasks every filter given matches, reading newest first (pending:
	// from the head) at most Scan tasks per call; the page may hold fewer
	// than Limit tasks before its end, and Next goes on further back.
	// Filters never look inside payloads; an error encrypted with
	// Config.EncryptErrors matches only when the Inspector has the
	// KeyRing.

	// Type matches a task type exactly, or by prefix when it ends in "*"
	// ("email:*").
	Type string
	// Error matches a substring of the last error, without regard to
	// case (dead and retrying tasks have one).
	Error string
	// IDPrefix matches the start of the task ID.
	IDPrefix string
	// Group matches the task's group (Group) exactly.
	Group string
	// Scan bounds how many tasks a filtered call reads (default and at
	// most 2,000), so its cost is bounded whatever the queue's size.
	Scan int
}

// TaskPage is one page of a TaskQuery.
type TaskPage struct {
	Tasks []*TaskInfo
	// Next is the marker of the following page. A short page means the end
	// was reached; reading after Next later returns what arrived since.
	Next string
	// Newer is set on the first page of a Newest query: reading oldest
	// first after it returns the tasks that arrive after this page was
	// read (a live tail). On oldest-first pages it equals Next.
	Newer string
	// Scanned is how many tasks a filtered call read; its Next is ""
	// when the state was read to its end.
	Scanned int
}

// ListTasks returns a page of the tasks of q.State in q.Queue, in one
// round trip after the registry lookup: one script call per partition,
// pipelined, each costing the same whatever the size of the queue. A
// reader following Next never misses a task that stays in the state,
// while producers enqueue and workers run: feeds page by rank, sets by
// (score, ID), and the pending list by a position that is found again by
// ID after pops. A task that moves (a lease extended, a task requeued to
// the head) may be seen twice. Partitions are merged by time. A query
// with filters (Type, Error, IDPrefix, Group) reads as TaskQuery says.
func (i *Inspector) ListTasks(ctx context.Context, q TaskQuery) (*TaskPage, error) {
	if err := taskState("list tasks", q.State); err != nil {
		return nil, err
	}
	if q.State == "" {
		q.State = stateRecent
	}
	if q.Type != "" || q.Error != "" || q.IDPrefix != "" || q.Group != "" {
		return i.filtered(ctx, q)
	}
	return i.listTasks(ctx, q)
}

// listTasks pages q.State's tasks, filters aside.
func (i *Inspector) listTasks(ctx context.Context, q TaskQuery) (*TaskPage, error) {
	if q.State == "" {
		q.State = stateRecent
	}
	if q.State == StatePending && q.Newest {
		return nil, fmt.Errorf("%w: pending tasks page from the head only (Newest)", errInvalidOption)
	}
	if q.Limit == 0 {
		q.Limit = defaultPageSize
	}
	if q.Limit < 0 || q.Limit > maxPageSize {
		return nil, fmt.Errorf("%w: Limit %d, want 1..%d", errInvalidOption, q.Limit, maxPageSize)
	}
	setKey, err := stateSet(q.State)
	if err != nil {
		return nil, err
	}
	n, err := i.partitions(ctx, q.Queue)
	if err != nil {
		return nil, err
	}
	after, err := decodeMarker(q, n)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, n)
	err = rcall.Do(ctx, i.rdb, func() error {
		return rcall.Pipelined(ctx, i.rdb, func(p *rcall.Pipe) error {
			for part := range n {
				if after[part] != markerEnd {
					cmds[part] = i.queueList(ctx, p, q, part, setKey, after[part])
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list %s tasks of %q: %w", q.State, q.Queue, err)
	}
	runs := make([][]listed, n)
	for part, cmd := range cmds {
		if cmd == nil {
			continue
		}
		if runs[part], err = parseListed(q, part, cmd, i.opener()); err != nil {
			return nil, fmt.Errorf("list %s tasks of %q: %w", q.State, q.Queue, err)
		}
	}
	return mergePage(q, after, runs), nil
}

// stateSet returns the key method of the sorted set holding a state ("" for pending).
func stateSet(s State) (func(keys.Partition) string, error) {
	switch s {
	case StatePending:
		return nil, nil
	case StateActive:
		return keys.Partition.Active, nil
	case StateScheduled:
		return keys.Partition.Scheduled, nil
	case StateRetry:
		return keys.Partition.Retry, nil
	case StateDead:
		return keys.Partition.Dead, nil
	case StateSucceeded:
		return keys.Partition.Done, nil
	case stateRecent:
		return keys.Partition.Feed, nil
	}
	return nil, fmt.Errorf("%w: state %q, want pending, active, scheduled, retry, dead, succeeded or empty (recent)", errInvalidOption, s)
}

// queueList queues the listing script of one partition.
func (i *Inspector) queueList(ctx context.Context, p *rcall.Pipe, q TaskQuery, part int, setKey func(keys.Partition) string, after string) *redis.Cmd {
	k := keys.For(i.cfg.Prefix, q.Queue, part)
	if setKey == nil {
		key, shard, index, id := "", "", "", ""
		if after != "" && after != markerEnd {
			key, shard, index, id, _ = parsePendingMarker(after) // checked by decodeMarker
			id = wire.StoredID(id)
		}
		return p.Run(ctx, script.ListPending, []string{k.First(), k.Last(), k.State()},
			k.ShardPrefix(), shard, index, id, q.Limit, key)
	}
	score, member := "", ""
	if after != "" {
		score, member, _ = strings.Cut(after, ",")
		member = wire.StoredID(member)
	}
	order := "asc"
	if q.Newest {
		order = "desc"
	}
	return p.Run(ctx, script.ListZset, []string{setKey(k), k.Msg(), k.State(), k.FeedMsg()},
		score, member, q.Limit, order)
}

// listed is one task of a partition's page and the marker just after it.
type listed struct {
	task   *TaskInfo
	marker string
	score  float64 // where it ranks among partitions: a time, or a rank
}

// parseListed decodes one partition's page.
// o opens each task's values.
func parseListed(q TaskQuery, part int, cmd *redis.Cmd, o *opener) ([]listed, error) {
	out, err := parseReply(q, part, cmd)
	for _, l := range out {
		o.open(l.task)
	}
	return out, err
}

// parseReply decodes one partition's page, values in their stored form.
func parseReply(q TaskQuery, part int, cmd *redis.Cmd) ([]listed, error) {
	res, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if q.State == StatePending {
		return parsePending(q.Queue, part, res)
	}
	var out []listed
	for j := 0; j+3 < len(res); j += 4 {
		id, _ := res[j].(string)
		score, _ := res[j+1].(string)
		msg, hasMsg := res[j+2].(string)
		rec, _ := res[j+3].(string)
		ti := &TaskInfo{ID: wire.PublicID(id), Queue: q.Queue, Partition: part}
		if q.State != stateRecent {
			ti.State = q.State // a set entry whose task has no message left
		}
		if hasMsg { // nil: none left; "" is a message, if a malformed one
			ti = taskFromReply(q.Queue, part, id, msg, rec)
		}
		l := listed{task: ti, marker: score + "," + wire.PublicID(id)}
		switch q.State {
		case stateRecent, StateDead, StateSucceeded:
			ti.Rank = int64(parseScore(score))
			l.score = float64(ti.EnqueuedAt.UnixMilli())
			if q.State != stateRecent {
				l.score = float64(ti.FinishedAt.UnixMilli())
			}
		default:
			l.score = parseScore(score)
		}
		out = append(out, l)
	}
	return out, nil
}

// parsePending decodes a list_pending reply.
func parsePending(queue string, part int, res []any) ([]listed, error) {
	var out []listed
	for j := 0; j+5 < len(res); j += 6 {
		shard, _ := res[j].(int64)
		index, _ := res[j+1].(int64)
		id, _ := res[j+2].(string)
		msg, _ := res[j+3].(string)
		rec, _ := res[j+4].(string)
		key, _ := res[j+5].(string)
		ti := taskFromReply(queue, part, id, msg, rec)
		ti.State = StatePending
		out = append(out, listed{task: ti, marker: pendingMarker(key, shard, index, wire.PublicID(id)),
			score: float64(ti.EnqueuedAt.UnixMilli())})
	}
	return out, nil
}

// pendingMarker is a pending task's position: "shard,index,id" in the
// pending list, "f,shard,index,key,id" in the list of a key (base64url:
// a key may hold commas; the ID, last, may too).
func pendingMarker(key string, shard, index int64, id string) string {
	if key == "" {
		return fmt.Sprintf("%d,%d,%s", shard, index, id)
	}
	return fmt.Sprintf("f,%d,%d,%s,%s", shard, index, base64.RawURLEncoding.EncodeToString([]byte(key)), id)
}

// parsePendingMarker reads a pendingMarker: key "" for the pending list.
func parsePendingMarker(f string) (key, shard, index, id string, err error) {
	if rest, ok := strings.CutPrefix(f, "f,"); ok {
		p := strings.SplitN(rest, ",", 4)
		if len(p) != 4 || p[3] == "" {
			return "", "", "", "", fmt.Errorf("bad position %q", f)
		}
		k, err := base64.RawURLEncoding.DecodeString(p[2])
		if err != nil || len(k) == 0 {
			return "", "", "", "", fmt.Errorf("bad position %q", f)
		}
		return string(k), p[0], p[1], p[3], nil
	}
	p := strings.SplitN(f, ",", 3)
	if len(p) != 3 || p[2] == "" {
		return "", "", "", "", fmt.Errorf("bad position %q", f)
	}
	return "", p[0], p[1], p[2], nil
}

// mergePage merges the partitions' pages by score (each partition's own
// order kept), takes q.Limit tasks and works out the markers.
func mergePage(q TaskQuery, after []string, runs [][]listed) *TaskPage {
	n := len(runs)
	next := append([]string(nil), after...)
	taken := make([]int, n)
	page := &TaskPage{}
	for len(page.Tasks) < q.Limit {
		best := -1
		for part, run := range runs {
			if taken[part] >= len(run) {
				continue
			}
			if best < 0 || better(q.Newest, run[taken[part]].score, runs[best][taken[best]].score) {
				best = part
			}
		}
		if best < 0 {
			break
		}
		l := runs[best][taken[best]]
		page.Tasks = append(page.Tasks, l.task)
		next[best] = l.marker
		taken[best]++
	}
	if q.Newest {
		// a partition whose every remaining task was taken is done with
		newer := make([]string, n)
		for part, run := range runs {
			if after[part] == markerEnd || (len(run) < q.Limit && taken[part] == len(run)) {
				next[part] = markerEnd
			}
			if len(run) > 0 {
				newer[part] = run[0].marker
			}
		}
		if q.After == "" {
			page.Newer = encodeMarker(q.State, false, newer)
		}
	}
	page.Next = encodeMarker(q.State, q.Newest, next)
	if !q.Newest {
		page.Newer = page.Next
	}
	return page
}

// better reports whether score a comes before b in the page's order.
func better(newest bool, a, b float64) bool {
	if newest {
		return a > b
	}
	return a < b
}

// markerEnd marks a partition with nothing left in a Newest listing.
const markerEnd = "$"

// Markers are base64url of "<state> <a|d>" then one field per partition,
// separated by 0x1e (task IDs hold no control characters). A partition's
// field is "" (from the start), markerEnd, "score,id" for the sorted sets or
// "shard,index,id" for the pending list.
func encodeMarker(s State, newest bool, parts []string) string {
	dir := "a"
	if newest {
		dir = "d"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(string(s) + " " + dir + "\x1e" + strings.Join(parts, "\x1e")))
}

// listable reports whether ListTasks lists state s.
func listable(s State) bool {
	_, err := stateSet(s)
	return err == nil
}

// markerOrder names a marker's direction for error messages.
var markerOrder = map[string]string{"a": "oldest first", "d": "newest first"}

// decodeMarker returns q.After's field per partition, one per partition
// of n (a partition added since starts from the beginning).
func decodeMarker(q TaskQuery, n int) ([]string, error) {
	out := make([]string, n)
	if q.After == "" {
		return out, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: marker %q: %s", errInvalidOption, q.After, why)
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.After)
	if err != nil {
		return nil, bad("not base64url")
	}
	fields := strings.Split(string(raw), "\x1e")
	dir := "a"
	if q.Newest {
		dir = "d"
	}
	if fields[0] != string(q.State)+" "+dir {
		st, d, ok := strings.Cut(fields[0], " ")
		if !ok || (d != "a" && d != "d") || !listable(State(st)) {
			return nil, bad("not a marker this Inspector made")
		}
		return nil, bad(fmt.Sprintf("made for the %s tasks, %s; this listing is the %s tasks, %s",
			st, markerOrder[d], q.State, markerOrder[dir]))
	}
	parts := fields[1:]
	if len(parts) > n {
		return nil, bad(fmt.Sprintf("%d partitions, the queue has %d", len(parts), n))
	}
	for j, f := range parts {
		if err := checkMarkerField(q.State, f); err != nil {
			return nil, bad(err.Error())
		}
		out[j] = f
	}
	return out, nil
}

func checkMarkerField(s State, f string) error {
	if f == "" || f == markerEnd {
		return nil
	}
	if s == StatePending {
		_, shard, index, _, err := parsePendingMarker(f)
		if err != nil {
			return err
		}
		_, err1 := strconv.ParseInt(shard, 10, 64)
		i, err2 := strconv.ParseInt(index, 10, 64)
		if err1 != nil || err2 != nil || i < 0 {
			return fmt.Errorf("bad position %q", f)
		}
		return nil
	}
	score, id, ok := strings.Cut(f, ",")
	v, err := strconv.ParseFloat(score, 64)
	if !ok || id == "" || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("bad position %q", f)
	}
	return nil
}

// parseScore reads a score as a script returns it (a string); 0 when it is not one.
func parseScore(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}
