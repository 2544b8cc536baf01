package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardq/shardq/queue"
)

// lineBatch bounds the tasks of one EnqueueMany call.
const lineBatch = 500

// line is one line of input, numbered from 1.
type line struct {
	n    int
	text []byte
}

// lineCount tallies what became of the lines.
type lineCount struct {
	enqueued, rejected int
	start, lastReport  time.Time
}

// lines enqueues one task per line. Lines are read as they come, and a
// batch is sent when it is full or when no more input is waiting, so a
// slow producer (`tail -f log | shardq enqueue --lines`) sees its tasks
// enqueued at once. Progress goes to stderr every second.
func (e *enqueuer) lines(ctx context.Context) error {
	in, err := e.input()
	if err != nil {
		return err
	}
	defer in.Close()
	client, closeRedis, err := e.client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan line, lineBatch)
	var readErr error
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64*1024), maxPayload+1)
		for n := 1; sc.Scan(); n++ {
			if len(sc.Bytes()) == 0 {
				continue
			}
			select {
			case ch <- line{n: n, text: append([]byte(nil), sc.Bytes()...)}:
			case <-ctx.Done():
				return
			}
		}
		readErr = sc.Err()
	}()

	cnt := &lineCount{start: time.Now(), lastReport: time.Now()}
	batch := make([]line, 0, lineBatch)
	for {
		var l line
		var ok bool
		select {
		case l, ok = <-ch:
		case <-ctx.Done():
			return fmt.Errorf("interrupted after %d tasks enqueued: %w", cnt.enqueued, context.Cause(ctx))
		}
		if !ok {
			break
		}
		batch = append(batch[:0], l)
	fill:
		for len(batch) < lineBatch {
			select {
			case l, ok := <-ch:
				if !ok {
					break fill
				}
				batch = append(batch, l)
			default:
				break fill
			}
		}
		if err := e.send(ctx, client, batch, cnt); err != nil {
			// where to resume: the batch's first line (none of it is known
			// to be in; with its reply lost, some of it may be)
			return fmt.Errorf("after %d tasks enqueued, from line %d on not enqueued: %w", cnt.enqueued, batch[0].n, err)
		}
		e.progress(cnt, false)
	}
	if errors.Is(readErr, bufio.ErrTooLong) {
		return fmt.Errorf("after %d tasks enqueued: a line is over %d bytes", cnt.enqueued, maxPayload)
	}
	if readErr != nil {
		return fmt.Errorf("read input after %d tasks enqueued: %w", cnt.enqueued, readErr)
	}
	e.progress(cnt, true)
	if cnt.rejected > 0 {
		return fmt.Errorf("%d of %d lines not enqueued (see above)", cnt.rejected, cnt.enqueued+cnt.rejected)
	}
	return nil
}

// send enqueues a batch in one round trip, printing each task's ID and
// state and reporting rejected lines on stderr.
func (e *enqueuer) send(ctx context.Context, client *queue.Client, batch []line, cnt *lineCount) error {
	tasks := make([]*queue.Task, 0, len(batch))
	lines := make([]line, 0, len(batch))
	for _, l := range batch {
		t, err := e.task(l.text)
		if err != nil {
			e.reject(l, err, cnt)
			continue
		}
		tasks = append(tasks, t)
		lines = append(lines, l)
	}
	if len(tasks) == 0 {
		return nil
	}
	wctx, cancel := e.waitContext(ctx) // --wait bounds each batch's wait for room
	defer cancel()
	infos, err := client.EnqueueMany(wctx, tasks, e.opts...)
	var be *queue.EnqueueError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	for i, info := range infos {
		if info != nil {
			fmt.Fprintf(e.m.Stdout, "%s %s\n", info.ID, info.State)
			cnt.enqueued++
		} else if be != nil && i < len(be.Errs) && be.Errs[i] != nil {
			e.reject(lines[i], e.explainLine(be.Errs[i]), cnt)
		}
	}
	return nil
}

func (e *enqueuer) explainLine(err error) error {
	if errors.Is(err, queue.ErrDuplicateUniqueTask) {
		return errors.New(e.duplicate())
	}
	if errors.Is(err, queue.ErrQueueFull) {
		return errors.New(e.full())
	}
	if e.f.wait > 0 && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s; --wait ended a try midway, so it may be enqueued after all", e.full())
	}
	return err
}

func (e *enqueuer) reject(l line, err error, cnt *lineCount) {
	cnt.rejected++
	fmt.Fprintf(e.m.Stderr, "line %d: not enqueued: %v\n", l.n, err)
}

// progress reports on stderr once a second, and at the end when the
// input took more than a second.
func (e *enqueuer) progress(cnt *lineCount, end bool) {
	now := time.Now()
	if now.Sub(cnt.lastReport) < time.Second && !(end && now.Sub(cnt.start) >= time.Second) {
		return
	}
	cnt.lastReport = now
	elapsed := now.Sub(cnt.start)
	verb := "enqueued"
	if end {
		verb = "done: enqueued"
	}
	fmt.Fprintf(e.m.Stderr, "%s %d tasks in %v (%.0f/s)", verb, cnt.enqueued, elapsed.Round(time.Millisecond),
		float64(cnt.enqueued)/elapsed.Seconds())
	if cnt.rejected > 0 {
		fmt.Fprintf(e.m.Stderr, ", %d lines rejected", cnt.rejected)
	}
	fmt.Fprintln(e.m.Stderr)
}
