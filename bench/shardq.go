package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

// shardqSystem drives shardq with a client as queue.NewRedisClient makes it.
type shardqSystem struct {
	label string
	rdb   redis.UniversalClient
	cfg   queue.Config
	c     *queue.Client
	insp  *queue.Inspector
}

// newShardq makes shardq as an application gets it: the default Config.
func newShardq(addr string) (system, error) {
	return shardqWith("shardq", queue.Config{Prefix: "shardq"})(addr)
}

// shardqWith returns a maker of shardq under cfg (its compression, its
// key ring), named label in the tables. Its producers, workers and
// Inspector share cfg, so the workers read what the producers wrote.
func shardqWith(label string, cfg queue.Config) func(addr string) (system, error) {
	return func(addr string) (system, error) {
		rdb, err := queue.NewRedisClient("redis://" + addr)
		if err != nil {
			return nil, err
		}
		c, err := queue.NewClient(rdb, cfg)
		if err != nil {
			_ = rdb.Close()
			return nil, err
		}
		insp, err := queue.NewInspector(rdb, cfg)
		if err != nil {
			_ = rdb.Close()
			return nil, err
		}
		return &shardqSystem{label: label, rdb: rdb, cfg: cfg, c: c, insp: insp}, nil
	}
}

func (s *shardqSystem) name() string { return s.label }

func (s *shardqSystem) enqueue(ctx context.Context, payload []byte) error {
	_, err := s.c.Enqueue(ctx, queue.NewRawTask("bench", payload), queue.In(queueName))
	return err
}

func (s *shardqSystem) fill(ctx context.Context, payloads [][]byte) error {
	batch := make([]*queue.Task, 0, 1000)
	for i, p := range payloads {
		batch = append(batch, queue.NewRawTask("bench", p))
		if len(batch) == cap(batch) || i == len(payloads)-1 {
			if _, err := s.c.EnqueueMany(ctx, batch, queue.In(queueName)); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

func (s *shardqSystem) start(ctx context.Context, conc int, h func([]byte)) (func(), error) {
	cfg := worker.Config{Config: s.cfg, Queues: map[string]int{queueName: 1}, Concurrency: conc}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := worker.NewServer(s.rdb, cfg, worker.HandlerFunc(func(_ context.Context, t *worker.Task) error {
		h(t.Payload)
		return nil
	}))
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

func (s *shardqSystem) leftover(ctx context.Context) (int64, error) {
	qi, err := s.insp.QueueInfo(ctx, queueName)
	if err != nil {
		return 0, err
	}
	return qi.Pending + qi.Active + qi.Scheduled + qi.Retry + qi.Dead + qi.Waiting, nil
}

func (s *shardqSystem) close() { _ = s.rdb.Close() }
