package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// HistoryPoint counts the attempts that finished within one step.
type HistoryPoint struct {
	Start     time.Time
	Succeeded int64
	Failed    int64 // failed attempts, whether retried or dead
}

// History is processed and failed task counts over time, from the
// per-minute counters workers keep (for eight days).
type History struct {
	Queue string        // "" when summed over more than one queue
	Span  time.Duration // time.Hour or 24 * time.Hour
	Step  time.Duration
	// Points are oldest first; the last is the current step, still counting.
	Points []HistoryPoint
}

// History returns the counts over span of queues, summed, or of every
// queue when none is named. A span is time.Hour (the last hour, per
// minute: 60 points) or 24 * time.Hour (the last day, per hour: 24
// points); another is ErrInvalid. It reads one MGET per partition, in one round trip
// after the registry read. A named queue the registry does not know is
// ErrNotFound.
func (i *Inspector) History(ctx context.Context, span time.Duration, queues ...string) (*History, error) {
	parts, err := i.partitionsOf(ctx, queues)
	if len(queues) == 0 {
		parts, err = i.registry(ctx)
	}
	if err != nil {
		return nil, err
	}
	h, err := i.history(ctx, served(parts), span)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", queueNames(queues), err)
	}
	if len(queues) == 1 {
		h.Queue = queues[0]
	}
	return h, nil
}

// queueNames names queues in a message: "every queue" for none.
func queueNames(queues []string) string {
	switch len(queues) {
	case 0:
		return "every queue"
	case 1:
		return strconv.Quote(queues[0])
	}
	return fmt.Sprintf("%d queues", len(queues))
}

func (i *Inspector) history(ctx context.Context, queues map[string]int, span time.Duration) (*History, error) {
	var points int
	var step time.Duration
	switch span {
	case time.Hour:
		points, step = 60, time.Minute
	case 24 * time.Hour:
		points, step = 24, time.Hour
	default:
		return nil, fmt.Errorf("%w: span %v, want 1h0m0s or 24h0m0s", errInvalidOption, span)
	}
	perStep := int64(step / time.Minute)
	// the first minute of the first step: steps align to whole minutes or hours
	nowMin := time.Now().Unix() / 60
	first := (nowMin/perStep - int64(points) + 1) * perStep
	minutes := int64(points) * perStep
	h := &History{Span: span, Step: step, Points: make([]HistoryPoint, points)}
	for j := range h.Points {
		h.Points[j].Start = time.Unix((first+int64(j)*perStep)*60, 0)
	}
	var cmds []*redis.SliceCmd
	err := rcall.Do(ctx, i.rdb, func() error {
		cmds = cmds[:0]
		_, err := i.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for q, n := range queues {
				for part := range n {
					k := keys.For(i.cfg.Prefix, q, part)
					ks := make([]string, 0, 2*minutes)
					for m := first; m < first+minutes; m++ {
						ks = append(ks, k.Stats("done", m), k.Stats("failed", m))
					}
					cmds = append(cmds, p.MGet(ctx, ks...))
				}
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, cmd := range cmds {
		for j, v := range cmd.Val() {
			s, _ := v.(string)
			c, _ := strconv.ParseInt(s, 10, 64)
			pt := &h.Points[int64(j/2)/perStep]
			if j%2 == 0 {
				pt.Succeeded += c
			} else {
				pt.Failed += c
			}
		}
	}
	return h, nil
}
