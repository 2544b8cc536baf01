package queue

import (
	"context"
	"sync"
)

// overviewParallel bounds how many queues QueueInfos reads at once.
const overviewParallel = 16

// QueueInfos returns the QueueInfo of every queue, sorted by name. Each
// queue costs QueueInfo's two round trips, whatever its size; queues are
// read concurrently.
func (i *Inspector) QueueInfos(ctx context.Context) ([]*QueueInfo, error) {
	names, err := i.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*QueueInfo, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, overviewParallel)
	var wg sync.WaitGroup
	for j, q := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[j], errs[j] = i.QueueInfo(ctx, q)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
