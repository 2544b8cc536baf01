package dashboard

import (
	"context"
	"fmt"
	"github.com/shardq/shardq/internal/inspect"
	"time"

	"github.com/shardq/shardq/queue"
)

// alarm is one thing on the overview an operator should look at now.
type alarm struct {
	Kind  string // no-workers, paused-growing, dead
	Queue string
	Text  string
}

// deadWindow is how far back the dead-task alarm looks, and deadSample how
// many of a queue's newest dead tasks it reads to count them.
const (
	deadWindow = time.Hour
	deadSample = 100
)

// growWindow is the window over which a paused queue's arrivals are
// measured (its rate needs a sample at least a tenth of it old).
const growWindow = 10 * time.Second

// alarms finds, for the queues of an overview page: queues with pending
// tasks and no live worker serving them; paused queues whose backlog grows (tasks arrive);
// queues with tasks that went to dead in the last hour. One round trip for
// the workers, and for each queue that may raise an alarm a bounded read
// (two round trips).
func (d *server) alarms(ctx context.Context, qs []*queue.QueueInfo) ([]alarm, error) {
	live, err := inspect.LiveWork(ctx, d.insp)
	if err != nil {
		return nil, err
	}
	var out []alarm
	for _, qi := range qs {
		q := qi.Queue
		if qi.Pending > 0 && live[q].Workers == 0 && !qi.Paused {
			out = append(out, alarm{"no-workers", q, fmt.Sprintf("%s has %s pending tasks and no live worker serving it.", q, num(qi.Pending))})
		}
		if qi.Paused && qi.Pending > 0 {
			sc, err := d.insp.Scaling(ctx, queue.ScalingQuery{Queue: q, RateWindow: growWindow})
			if err != nil {
				return nil, err
			}
			if sc.ArrivalRate > 0 {
				out = append(out, alarm{"paused-growing", q, fmt.Sprintf("%s is paused and its backlog grows: %s pending, %.1f tasks/s arriving.", q, num(qi.Pending), sc.ArrivalRate)})
			}
		}
		if qi.Dead > 0 {
			p, err := d.insp.ListTasks(ctx, queue.TaskQuery{Queue: q, State: queue.StateDead, Newest: true, Limit: deadSample})
			if err != nil {
				return nil, err
			}
			n, since := 0, time.Now().Add(-deadWindow)
			for _, ti := range p.Tasks {
				if ti.FinishedAt.After(since) {
					n++
				}
			}
			if n > 0 {
				more := ""
				if n == deadSample {
					more = " or more"
				}
				out = append(out, alarm{"dead", q, fmt.Sprintf("%s: %d%s tasks went to dead in the last hour.", q, n, more)})
			}
		}
	}
	return out, nil
}
