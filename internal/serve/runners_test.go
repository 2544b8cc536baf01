package serve

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunnersRunEveryJobOnce: jobs added in batches, from several
// goroutines, each run exactly once.
func TestRunnersRunEveryJobOnce(t *testing.T) {
	t.Parallel()
	const producers, batches, size = 4, 200, 16
	var wg sync.WaitGroup
	seen := make([]atomic.Int32, producers*batches*size)
	wg.Add(len(seen))
	rs := newRunners(func(j job) {
		seen[j.l.token].Add(1)
		wg.Done()
	})
	defer rs.stop()
	for p := range producers {
		go func() {
			for b := range batches {
				tasks := make([]leased, size)
				for i := range tasks {
					tasks[i].token = int64((p*batches+b)*size + i)
				}
				rs.add(nil, tasks)
			}
		}()
	}
	wg.Wait()
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("job %d ran %d times", i, n)
		}
	}
}

// TestRunnersBoundedBySlots: as in a server, where a job holds a slot
// from its pop to its end, the runners stay about as many as the slots
// (a runner that just freed its slot may not be idle yet), however many
// batches come.
func TestRunnersBoundedBySlots(t *testing.T) {
	t.Parallel()
	const slots, batches = 16, 500
	free := make(chan struct{}, slots)
	for range slots {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	wg.Add(slots * batches)
	rs := newRunners(func(job) {
		free <- struct{}{}
		wg.Done()
	})
	defer rs.stop()
	for range batches {
		n := 0
		for n < slots {
			<-free
			n++
		}
		rs.add(nil, make([]leased, n))
		if c := rs.count(); c > 2*slots {
			t.Fatalf("%d runners for %d slots", c, slots)
		}
	}
	wg.Wait()
}

// TestRunnersRunSlowJobsAtOnce: jobs that block until all of them have
// started each get a runner of their own; with runners that only took the
// next job after finishing one, this would never end.
func TestRunnersRunSlowJobsAtOnce(t *testing.T) {
	t.Parallel()
	const n = 16
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	var done sync.WaitGroup
	done.Add(n)
	rs := newRunners(func(job) {
		started.Done()
		<-all
		done.Done()
	})
	defer rs.stop()
	rs.add(nil, make([]leased, n))
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatal("the jobs did not all start: some waited behind a blocked one")
	}
	done.Wait()
}

// TestRunnersStop: after stop, every runner leaves once idle.
func TestRunnersStop(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var done sync.WaitGroup
	done.Add(8)
	rs := newRunners(func(job) { <-release; done.Done() })
	rs.add(nil, make([]leased, 8))
	time.Sleep(10 * time.Millisecond)
	rs.stop() // runners are busy: they leave after their jobs
	close(release)
	done.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for rs.count() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d runners left after stop", rs.count())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunnersQueueStaysSmall: a queue that is never quite empty (a job is
// added before the last one is taken) reuses its slice instead of growing
// it forever.
func TestRunnersQueueStaysSmall(t *testing.T) {
	t.Parallel()
	rs := newRunners(func(job) {})
	rs.queue = append(rs.queue, job{l: leased{token: 0}})
	for i := 1; i <= 100_000; i++ {
		rs.queue = append(rs.queue, job{l: leased{token: int64(i)}})
		if j := rs.nextLocked(); j.l.token != int64(i-1) {
			t.Fatalf("took job %d, want %d: not first in, first out", j.l.token, i-1)
		}
	}
	if len(rs.queue)-rs.head != 1 || cap(rs.queue) > 256 {
		t.Fatalf("queue of %d jobs holds a slice of capacity %d", len(rs.queue)-rs.head, cap(rs.queue))
	}
}
