package queue

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// maxKeyWeight bounds SetGroupWeight: one turn takes at most this many tasks
// of a group.
const maxKeyWeight = 1000

// GroupInfo is what runs and waits for one group.
type GroupInfo struct {
	// Group is the group; "" in LimitInfo.Groups, whose map names it.
	Group string
	// Running is how many of the group's tasks are leased, as QueueInfo.Active
	// counts them. Under a GroupConcurrency it is what the limit counts: the
	// tasks leased while it was set. Without one it is counted among the
	// first 10,000 leases of the group's partition, so a call reads a bounded
	// number of tasks.
	Running int64
	// Waiting is how many of the group's tasks wait to start.
	Waiting int64
	// Weight is how many tasks the group starts per turn while several groups
	// have tasks waiting (SetGroupWeight); 1 unless set.
	Weight int
	// Paused is set while an operator paused the group (Inspector.Pause with the group).
	Paused bool
}

// GroupQuery selects a page of a queue's groups, the groups with
// the most tasks waiting first.
type GroupQuery struct {
	Queue string
	// After is the marker: the Next of the previous page ("" = from the top).
	After string
	// Limit bounds the page. Defaults to 50, at most 1,000.
	Limit int
}

// GroupPage is one page of a GroupQuery.
type GroupPage struct {
	Groups []GroupInfo
	// Next is the marker of the following page; "" when this page is the last.
	Next string
}

// SetGroupWeight sets how many tasks group starts per turn in queue. While
// several groups have tasks waiting, they take turns: a group of weight 3
// starts three tasks for each one a group of weight 1 starts. The default
// weight is 1; setting 1 sets it back. It takes effect with no restart:
// the group's tasks enqueued after it, and the turns of its own list, get
// the new weight, while its tasks already placed in its next 16 turns
// keep their places. A weight below 1 or above 1,000 is ErrInvalid.
func (i *Inspector) SetGroupWeight(ctx context.Context, queue, group string, w int) error {
	if w < 1 || w > maxKeyWeight {
		return fmt.Errorf("%w: weight %d of group %q, want 1..%d", errInvalidOption, w, group, maxKeyWeight)
	}
	return i.keyOp(ctx, queue, group, "weight", w)
}

// groupsOp runs op ("pause" or "resume") for each group of queue.
func (i *Inspector) groupsOp(ctx context.Context, queue, op string, groups []string) error {
	for _, g := range groups {
		if err := i.keyOp(ctx, queue, g, op, 0); err != nil {
			return err
		}
	}
	return nil
}

// keyOp runs fair_key.lua on every partition of queue: a group's tasks are
// in the partition its hash picks, which a change of the partition count
// moves, so a setting holds in all of them.
func (i *Inspector) keyOp(ctx context.Context, queue, key, op string, w int) error {
	if err := checkName(key); err != nil {
		return fmt.Errorf("%w: group %q: %s", errInvalidOption, key, err)
	}
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return err
	}
	err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, _ int, k keys.Partition) {
		p.Run(ctx, script.FairKey, []string{k.FairPaused(), k.FairWeights(), k.FairKeys(), k.FairRing()}, k.T, key, op, w)
	})
	if err != nil {
		return fmt.Errorf("%s key %q of %q: %w", op, key, queue, err)
	}
	return nil
}

// GetGroup returns what runs and waits for group in queue, and its weight and
// pause, in one round trip after the registry lookup.
func (i *Inspector) GetGroup(ctx context.Context, queue, group string) (*GroupInfo, error) {
	if err := checkName(group); err != nil {
		return nil, fmt.Errorf("%w: group %q: %s", errInvalidOption, group, err)
	}
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, n)
	err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, part int, k keys.Partition) {
		cmds[part] = p.Run(ctx, script.FairKeys, fairKeysKeys(k), group, "", "", 1)
	})
	if err != nil {
		return nil, fmt.Errorf("group %q of %q: %w", group, queue, err)
	}
	ki := &GroupInfo{Group: group, Weight: 1}
	for _, cmd := range cmds {
		rows, err := parseKeyRows(cmd)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			ki.Running += r.Running
			ki.Waiting += r.Waiting
			ki.Weight, ki.Paused = r.Weight, ki.Paused || r.Paused
		}
	}
	return ki, nil
}

// Groups returns a page of queue's groups that have tasks waiting,
// the groups with the most first, in one round trip after the registry
// lookup: one script call per partition, each costing the same whatever
// the number of groups. Partitions are merged by tasks waiting. A group whose
// backlog changes between pages may be seen twice, or missed: a listing
// of the busiest groups now, not a census.
func (i *Inspector) Groups(ctx context.Context, q GroupQuery) (*GroupPage, error) {
	if q.Limit == 0 {
		q.Limit = defaultPageSize
	}
	if q.Limit < 0 || q.Limit > maxPageSize {
		return nil, fmt.Errorf("%w: limit %d, want 1..%d", errInvalidOption, q.Limit, maxPageSize)
	}
	n, err := i.partitions(ctx, q.Queue)
	if err != nil {
		return nil, err
	}
	after, err := decodeKeyMarker(q.After, n)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, n)
	err = i.perPartition(ctx, q.Queue, n, func(p *rcall.Pipe, part int, k keys.Partition) {
		if after[part] == markerEnd {
			return
		}
		score, key, _ := strings.Cut(after[part], ",")
		cmds[part] = p.Run(ctx, script.FairKeys, fairKeysKeys(k), "", score, key, q.Limit)
	})
	if err != nil {
		return nil, fmt.Errorf("keys of %q: %w", q.Queue, err)
	}
	type row struct {
		keyRow
		part int
	}
	var rows []row
	ran := make([]int, n) // rows per partition
	for part, cmd := range cmds {
		if cmd == nil {
			continue
		}
		rs, err := parseKeyRows(cmd)
		if err != nil {
			return nil, err
		}
		ran[part] = len(rs)
		for _, r := range rs {
			rows = append(rows, row{r, part})
		}
	}
	// each partition's rows come sorted; a stable sort keeps their order
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].score > rows[b].score })
	page := &GroupPage{}
	next := append([]string(nil), after...)
	taken := make([]int, n)
	for _, r := range rows[:min(len(rows), q.Limit)] {
		// a group whose last tasks were taken this turn, not yet forgotten
		if r.Waiting > 0 {
			page.Groups = append(page.Groups, r.GroupInfo)
		}
		next[r.part] = strconv.FormatInt(r.score, 10) + "," + r.Group
		taken[r.part]++
	}
	more := false
	for part := range n {
		if cmds[part] == nil || (ran[part] < q.Limit && taken[part] == ran[part]) {
			next[part] = markerEnd // nothing left there
		} else {
			more = true
		}
	}
	if more {
		page.Next = base64.RawURLEncoding.EncodeToString([]byte("keys\x1e" + strings.Join(next, "\x1e")))
	}
	return page, nil
}

func fairKeysKeys(k keys.Partition) []string {
	return []string{k.FairBacklog(), k.KeyActive(), k.FairWeights(), k.FairPaused(), k.FairKeys(), k.Limits(), k.Active(), k.Msg()}
}

// keyRow is a group of a fair_keys.lua reply and its place in the order of
// its partition's groups.
type keyRow struct {
	GroupInfo
	score int64
}

// parseKeyRows reads a fair_keys.lua reply.
func parseKeyRows(cmd *redis.Cmd) ([]keyRow, error) {
	res, err := cmd.Slice()
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	var out []keyRow
	for j := 0; j+5 < len(res); j += 6 {
		key, _ := res[j].(string)
		waiting, _ := res[j+1].(int64)
		running, _ := res[j+2].(int64)
		weight, _ := res[j+3].(int64)
		paused, _ := res[j+4].(int64)
		score, _ := res[j+5].(int64)
		out = append(out, keyRow{GroupInfo{Group: key, Waiting: waiting, Running: running, Weight: max(int(weight), 1), Paused: paused == 1}, score})
	}
	return out, nil
}

// decodeKeyMarker returns a Groups marker's position per partition, one per
// partition of n (a partition added since starts from the top).
func decodeKeyMarker(m string, n int) ([]string, error) {
	out := make([]string, n)
	if m == "" {
		return out, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(m)
	fields := strings.Split(string(raw), "\x1e")
	if err != nil || fields[0] != "keys" || len(fields)-1 > n {
		return nil, fmt.Errorf("%w: marker %q: not a marker of Keys", errInvalidOption, m)
	}
	for j, f := range fields[1:] {
		if f != "" && f != markerEnd {
			score, key, ok := strings.Cut(f, ",")
			if _, err := strconv.ParseInt(score, 10, 64); !ok || key == "" || err != nil {
				return nil, fmt.Errorf("%w: marker %q: bad position %q", errInvalidOption, m, f)
			}
		}
		out[j] = f
	}
	return out, nil
}
