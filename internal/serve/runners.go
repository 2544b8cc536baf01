package serve

import "sync"

// job is one leased task to run.
type job struct {
	p *part
	l leased
}

// runners runs jobs on a set of goroutines that stay for the next jobs, so
// a goroutine's stack, grown by its first task, is not grown again for
// every task. Jobs wait in a queue, and runners wake each other in a chain,
// the way the Go scheduler wakes its threads: a runner that takes a job
// and leaves others queued wakes one more runner, unless one is already
// on its way. A batch of quick handlers thus runs on a few goroutines that
// loop, instead of waking a goroutine per task (each wake-up can wake an
// idle OS thread too); slow handlers each end up on a runner of their own,
// one wake-up after another. A runner starts only when a job waits and
// none is idle, so there are about as many as tasks ever ran at once: in
// a server, Concurrency, and a few more while some finish.
type runners struct {
	mu        sync.Mutex
	queue     []job
	head      int             // queue[head:] waits
	idle      []chan struct{} // parked runners, most recent last
	searching int             // runners woken (or started) that have not yet looked at the queue
	live      int             // runner goroutines
	stopped   bool
	run       func(job)
}

func newRunners(run func(job)) *runners { return &runners{run: run} }

// add queues the tasks of p as jobs and makes sure a runner is on its way
// to them.
func (rs *runners) add(p *part, tasks []leased) {
	rs.mu.Lock()
	for _, l := range tasks {
		rs.queue = append(rs.queue, job{p, l})
	}
	if rs.searching == 0 {
		rs.wakeLocked()
	}
	rs.mu.Unlock()
}

// wakeLocked wakes a parked runner, or starts one; rs.mu is held.
func (rs *runners) wakeLocked() {
	rs.searching++
	if n := len(rs.idle); n > 0 {
		ch := rs.idle[n-1]
		rs.idle = rs.idle[:n-1]
		ch <- struct{}{} // buffered: never blocks
		return
	}
	rs.live++
	go rs.loop()
}

// loop is one runner: it takes queued jobs until there are none, then
// parks until woken, until stop.
func (rs *runners) loop() {
	wake := make(chan struct{}, 1)
	rs.mu.Lock()
	for {
		rs.searching--
		for rs.head < len(rs.queue) {
			j := rs.nextLocked()
			if rs.head < len(rs.queue) && rs.searching == 0 {
				rs.wakeLocked() // more wait: another runner to them
			}
			rs.mu.Unlock()
			rs.run(j)
			rs.mu.Lock()
		}
		if rs.stopped {
			rs.live--
			rs.mu.Unlock()
			return
		}
		rs.idle = append(rs.idle, wake)
		rs.mu.Unlock()
		<-wake
		rs.mu.Lock()
	}
}

// nextLocked takes the oldest queued job; rs.mu is held and one waits.
// The queue's slice is reused: emptied, it starts over, and a queue that
// never quite empties moves its jobs down once half of it is taken.
func (rs *runners) nextLocked() job {
	j := rs.queue[rs.head]
	rs.queue[rs.head] = job{}
	rs.head++
	switch {
	case rs.head == len(rs.queue):
		rs.queue, rs.head = rs.queue[:0], 0
	case rs.head >= 64 && 2*rs.head >= len(rs.queue):
		n := copy(rs.queue, rs.queue[rs.head:])
		clear(rs.queue[n:])
		rs.queue, rs.head = rs.queue[:n], 0
	}
	return j
}

// stop lets idle runners leave, and busy ones once their jobs are done
// (Shutdown calls it when no more jobs come).
func (rs *runners) stop() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.stopped = true
	for _, ch := range rs.idle {
		rs.searching++
		ch <- struct{}{}
	}
	rs.idle = nil
}

// count returns how many runner goroutines there are.
func (rs *runners) count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.live
}
