package main

import (
	"context"

	"github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
)

// gocraftSystem drives gocraft/work with its defaults. A job's payload is
// one string argument, as an application would pass 100 bytes of data.
type gocraftSystem struct {
	pool *redis.Pool
	enq  *work.Enqueuer
}

const gocraftNamespace = "gocraft"

func newGocraft(addr string) (system, error) {
	pool := &redis.Pool{
		MaxActive: 64, MaxIdle: 64, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) },
	}
	return &gocraftSystem{pool: pool, enq: work.NewEnqueuer(gocraftNamespace, pool)}, nil
}

func (*gocraftSystem) name() string { return "gocraft/work" }

func (s *gocraftSystem) enqueue(_ context.Context, payload []byte) error {
	_, err := s.enq.Enqueue("bench", work.Q{"p": string(payload)})
	return err
}

// fill has no batch call to use: gocraft/work enqueues one job per call.
func (s *gocraftSystem) fill(ctx context.Context, payloads [][]byte) error {
	return parallelFill(ctx, payloads, s.enqueue)
}

// gocraftContext is the (empty) job context gocraft/work requires.
type gocraftContext struct{}

func (s *gocraftSystem) start(_ context.Context, conc int, h func([]byte)) (func(), error) {
	wp := work.NewWorkerPool(gocraftContext{}, uint(conc), gocraftNamespace, s.pool)
	wp.Job("bench", func(j *work.Job) error {
		h([]byte(j.ArgString("p")))
		return nil
	})
	wp.Start()
	return wp.Stop, nil
}

// leftover reads gocraft/work's keys directly: its client has no count of
// in-progress jobs.
func (s *gocraftSystem) leftover(context.Context) (int64, error) {
	conn := s.pool.Get()
	defer conn.Close()
	ns := gocraftNamespace + ":"
	total := int64(0)
	for _, cmd := range [][]any{
		{"LLEN", ns + "jobs:bench"}, {"ZCARD", ns + "retry"}, {"ZCARD", ns + "dead"}, {"ZCARD", ns + "scheduled"},
	} {
		n, err := redis.Int64(conn.Do(cmd[0].(string), cmd[1:]...))
		if err != nil {
			return 0, err
		}
		total += n
	}
	inprogress, err := redis.Strings(conn.Do("KEYS", ns+"jobs:bench:*:inprogress"))
	if err != nil {
		return 0, err
	}
	for _, k := range inprogress {
		n, err := redis.Int64(conn.Do("LLEN", k))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func (s *gocraftSystem) close() { _ = s.pool.Close() }
