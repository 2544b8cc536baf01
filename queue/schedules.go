package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// ScheduleInfo describes a periodic schedule as its schedulers recorded it.
type ScheduleInfo struct {
	Name  string `json:"name"`
	Spec  string `json:"spec"`
	Queue string `json:"queue"`
	Type  string `json:"type"`
	// Missed is the missed-tick policy: "skip" or "run-once".
	Missed string `json:"missed"`
	// LastRun is the newest tick a scheduler enqueued (zero: none yet).
	LastRun time.Time `json:"-"`
	// NextRun is the next tick, as the last scheduler to look computed it.
	NextRun time.Time `json:"-"`
	// Last and Next are LastRun and NextRun in unix ms, as stored.
	Last int64 `json:"last"`
	Next int64 `json:"next"`
}

// Schedules returns every periodic schedule a scheduler has registered,
// sorted by name.
func (i *Inspector) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	var raw map[string]string
	err := rcall.Do(ctx, i.rdb, func() (err error) {
		raw, err = i.rdb.HGetAll(ctx, keys.Cron(i.cfg.Prefix)).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}
	out := make([]ScheduleInfo, 0, len(raw))
	for name, v := range raw {
		var s ScheduleInfo
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return nil, fmt.Errorf("read schedule %q: %w", name, err)
		}
		s.Name = name
		s.LastRun, s.NextRun = msTime(s.Last), msTime(s.Next)
		out = append(out, s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}
