package main

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
)

// asynqSystem drives hibiken/asynq with its defaults, but for logging and
// a short shutdown.
type asynqSystem struct {
	opt  asynq.RedisClientOpt
	c    *asynq.Client
	insp *asynq.Inspector
}

func newAsynq(addr string) (system, error) {
	// long timeouts: on a contended machine a 3 s read timeout (the
	// default) ends a fill of a million tasks half way
	opt := asynq.RedisClientOpt{Addr: addr, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	return &asynqSystem{opt: opt, c: asynq.NewClient(opt), insp: asynq.NewInspector(opt)}, nil
}

func (*asynqSystem) name() string { return "asynq" }

func (s *asynqSystem) enqueue(ctx context.Context, payload []byte) error {
	_, err := s.c.EnqueueContext(ctx, asynq.NewTask("bench", payload), asynq.Queue(queueName))
	return err
}

// fill has no batch call to use: asynq enqueues one task per call.
func (s *asynqSystem) fill(ctx context.Context, payloads [][]byte) error {
	return parallelFill(ctx, payloads, s.enqueue)
}

func (s *asynqSystem) start(_ context.Context, conc int, h func([]byte)) (func(), error) {
	srv := asynq.NewServer(s.opt, asynq.Config{
		Concurrency:     conc,
		Queues:          map[string]int{queueName: 1},
		LogLevel:        asynq.FatalLevel,
		ShutdownTimeout: 5 * time.Second,
	})
	err := srv.Start(asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		h(t.Payload())
		return nil
	}))
	if err != nil {
		return nil, err
	}
	return srv.Shutdown, nil
}

func (s *asynqSystem) leftover(context.Context) (int64, error) {
	qi, err := s.insp.GetQueueInfo(queueName)
	if err != nil {
		return 0, err
	}
	return int64(qi.Pending + qi.Active + qi.Scheduled + qi.Retry + qi.Archived + qi.Aggregating), nil
}

func (s *asynqSystem) close() {
	_ = s.c.Close()
	_ = s.insp.Close()
}
