package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// WaitForRoom makes Enqueue and EnqueueMany wait, within their context,
// for room in a queue at its Limits.MaxDepth instead of failing with
// ErrQueueFull. The client polls with a backoff of up to
// 200ms between tries. When the context ends while the client
// sleeps between tries, the task's error wraps both ErrQueueFull and the
// context's error; when it ends (or Redis fails) during a try, that try's
// outcome is unknown, and the task's error wraps the context's (or
// Redis's) error alone: with TaskID, enqueueing it again is safe. Either
// way the call's other tasks keep their results.
func WaitForRoom() Option {
	return func(o *options) error {
		o.waitRoom = true
		return nil
	}
}

// Polling bounds of WaitForRoom: the first retry comes after minRoomPoll,
// and each wait doubles up to maxRoomPoll.
const (
	minRoomPoll = 5 * time.Millisecond
	// maxRoomPoll is the longest a WaitForRoom enqueue sleeps between two
	// tries, so it takes room at most this long after a worker made it.
	maxRoomPoll = 200 * time.Millisecond
)

// waitForRoom sends again, until ctx ends, the tasks that asked to wait
// and were refused for a full queue: one round trip per try for all of
// them. A try that fails leaves only its own tasks' outcome unknown.
func (c *Client) waitForRoom(ctx context.Context, groups []*group, infos []*TaskInfo, errs []error) {
	delay := minRoomPoll
	for {
		waiting := refusedWaiting(groups, errs)
		if len(waiting) == 0 {
			return
		}
		t := time.NewTimer(delay/2 + rand.N(delay/2+1)) // jittered: waiting producers spread out
		select {
		case <-ctx.Done():
			t.Stop()
			for _, g := range waiting {
				for _, p := range g.tasks {
					errs[p.index] = fmt.Errorf("%w (waited for room: %w)", errs[p.index], context.Cause(ctx))
				}
			}
			return
		case <-t.C:
		}
		delay = min(2*delay, maxRoomPoll)
		for _, g := range waiting {
			for _, p := range g.tasks {
				errs[p.index] = nil
			}
		}
		if err := c.send(ctx, waiting, infos, errs); err != nil {
			for _, g := range waiting {
				for _, p := range g.tasks {
					errs[p.index] = fmt.Errorf("waiting for room in %q, a try's outcome is unknown: %w", g.queue, err)
				}
			}
			return
		}
	}
}

// refusedWaiting returns, grouped as sent, the tasks that asked to wait
// and were refused for a full queue.
func refusedWaiting(groups []*group, errs []error) []*group {
	var out []*group
	for _, g := range groups {
		var ps []pending
		for _, p := range g.tasks {
			if p.wait && errors.Is(errs[p.index], ErrQueueFull) {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			out = append(out, &group{queue: g.queue, partition: g.partition, tasks: ps})
		}
	}
	return out
}
