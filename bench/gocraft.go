package main

import (
	"context"
	"encoding/json"

	"github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
)

// gocraftSystem drives gocraft/work with its defaults. A job's payload is
// one string argument, as an application would pass 100 bytes of data.
type gocraftSystem struct {
	pool *redis.Pool
	enq  *work.Enqueuer
	// jsonArg passes each payload, a JSON document, as a JSON argument:
	// stored as it is, where a string argument stores it escaped, every
	// quote as \" (a sixth more bytes for the payloads workload's).
	jsonArg bool
}

const gocraftNamespace = "gocraft"

func newGocraft(addr string) (system, error) {
	pool := &redis.Pool{
		MaxActive: 64, MaxIdle: 64, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) },
	}
	return &gocraftSystem{pool: pool, enq: work.NewEnqueuer(gocraftNamespace, pool)}, nil
}

// newGocraftJSON is newGocraft for JSON payloads, passed as JSON
// arguments: gocraft/work at its smallest for them.
func newGocraftJSON(addr string) (system, error) {
	s, err := newGocraft(addr)
	if err != nil {
		return nil, err
	}
	s.(*gocraftSystem).jsonArg = true
	return s, nil
}

func (s *gocraftSystem) name() string {
	if s.jsonArg {
		return "gocraft/work json"
	}
	return "gocraft/work"
}

func (s *gocraftSystem) enqueue(_ context.Context, payload []byte) error {
	var arg any = string(payload)
	if s.jsonArg {
		arg = json.RawMessage(payload)
	}
	_, err := s.enq.Enqueue("bench", work.Q{"p": arg})
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
		if s.jsonArg {
			// the document decoded and encoded again: its content, not
			// its bytes (keys sorted, numbers as float64)
			p, err := json.Marshal(j.Args["p"])
			h(p)
			return err
		}
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
