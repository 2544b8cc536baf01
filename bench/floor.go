package main

import (
	"context"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
)

// enqueuer is what the single-enqueue turns drive: a system, or a floor.
type enqueuer interface {
	enqueue(ctx context.Context, payload []byte) error
}

// floor is the single-enqueue floor of one client library: one bare LPUSH
// of the payload per call, no script, no encoding, no ID. It takes its
// turns with the systems, so each system's rate reads against what one
// round trip through its own library costs in the same spells: shardq and
// asynq use go-redis, gocraft/work uses redigo.
type floor struct {
	lib  string // the library, as the report names it
	push func(ctx context.Context, payload []byte) error
	done func()
}

func (f *floor) enqueue(ctx context.Context, payload []byte) error { return f.push(ctx, payload) }

// floorKey is the list the floors push onto, outside every system's keys.
const floorKey = "floor:list"

// newFloors returns the go-redis and the redigo floor against addr.
func newFloors(addr string) []*floor {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	pool := &redigo.Pool{
		MaxActive: 64, MaxIdle: 64, Wait: true,
		Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", addr) },
	}
	return []*floor{
		{lib: "go-redis", push: func(ctx context.Context, p []byte) error {
			return rdb.LPush(ctx, floorKey, p).Err()
		}, done: func() { _ = rdb.Close() }},
		{lib: "redigo", push: func(_ context.Context, p []byte) error {
			c := pool.Get()
			defer c.Close()
			_, err := c.Do("LPUSH", floorKey, p)
			return err
		}, done: func() { _ = pool.Close() }},
	}
}

// floorLib names the client library each system uses, for the report's
// ratio to its floor.
var floorLib = map[string]string{"shardq": "go-redis", "asynq": "go-redis", "gocraft/work": "redigo"}
