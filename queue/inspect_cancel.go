package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
)

// cancelKeep is how long an unanswered cancel request is kept: a task that
// finished before a worker saw its request leaves it behind this long.
const cancelKeep = time.Hour

// CancelTask asks the worker running the active task id of queue to
// cancel its handler: the request is recorded in the partition's cancel
// set, which the worker reads at its next heartbeat and answers by
// cancelling the handler's context (cause worker.ErrCancelled). A handler
// that then returns an error sends the task to dead, not to a retry; one
// that returns nil finished it anyway. A task that is not
// active is ErrTaskState. Two round trips.
func (i *Inspector) CancelTask(ctx context.Context, queue, id string) error {
	n, err := i.partitions(ctx, queue)
	if err != nil {
		return err
	}
	cmds := make([]*redis.Cmd, n)
	err = i.perPartition(ctx, queue, n, func(p *rcall.Pipe, part int, k keys.Partition) {
		cmds[part] = p.Run(ctx, script.CancelTask, []string{k.Active(), k.Cancel()}, "", wire.StoredID(id), cancelKeep.Milliseconds())
	})
	if err != nil {
		return fmt.Errorf("cancel task %q of %q: %w", id, queue, err)
	}
	for _, cmd := range cmds {
		if v, _ := cmd.Int64(); v == 1 {
			return nil
		}
	}
	return fmt.Errorf("%w: cancel task %q of %q: it is not active", ErrTaskState, id, queue)
}
