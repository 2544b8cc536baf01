package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// system is one task queue under test, driven through its own public API
// against the run's private Redis.
type system interface {
	// name is how the tables show it.
	name() string
	// enqueue adds one task, the way an application enqueues a single task.
	enqueue(ctx context.Context, payload []byte) error
	// fill enqueues one task per payload, as fast as the system's normal
	// producer API allows (its batch call where it has one).
	fill(ctx context.Context, payloads [][]byte) error
	// start runs workers at concurrency conc; h runs for every task, given
	// the task's payload. The returned stop shuts them down.
	start(ctx context.Context, conc int, h func(payload []byte)) (stop func(), err error)
	// leftover counts the tasks still pending, active, retrying, scheduled
	// or dead; zero after a clean run.
	leftover(ctx context.Context) (int64, error)
	close()
}

// queueName is the queue every system uses.
const queueName = "bench"

// payloadFor returns the 100-byte-class ASCII payload of task i: its index,
// so a handler knows which task ran, padded to size.
func payloadFor(i, size int) []byte {
	p := make([]byte, size)
	for j := range p {
		p[j] = 'x'
	}
	copy(p, fmt.Sprintf("%010d", i))
	return p
}

// indexOf reads the index payloadFor wrote.
func indexOf(p []byte) int {
	n := 0
	for _, c := range p[:min(10, len(p))] {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// payloadSource hands out the tasks' payloads of a workload, and tells
// which task a payload a handler got belongs to.
type payloadSource interface {
	// payloads returns the payloads of tasks from..to-1.
	payloads(from, to int) [][]byte
	// index is the task p belongs to, or -1 if p is none of them.
	index(p []byte) int
}

// padded is the payloadSource of payloadFor's payloads of its size.
type padded int

func (size padded) payloads(from, to int) [][]byte {
	ps := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		ps = append(ps, payloadFor(i, int(size)))
	}
	return ps
}

func (padded) index(p []byte) int { return indexOf(p) }

// parallelFill calls enqueue for every payload from 16 goroutines: for the
// systems without a batch call, the fastest fill their API offers.
func parallelFill(ctx context.Context, payloads [][]byte, enqueue func(context.Context, []byte) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var first atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(payloads)) || ctx.Err() != nil {
					return
				}
				if err := enqueue(ctx, payloads[i]); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return ctx.Err()
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() (bool, error)) error {
	end := time.Now().Add(d)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("not done after %s", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
