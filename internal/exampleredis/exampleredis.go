// Package exampleredis gives the runnable Example functions of shardq's
// packages a private redis-server, so that go test runs them without a
// Redis of yours. In your code, use the URL of your own Redis.
package exampleredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

// URL starts a private redis-server and returns its URL and how to stop it.
func URL() (url string, stop func()) {
	srv, err := redisproc.Start()
	if err != nil {
		panic(err)
	}
	return srv.URL(), func() { _ = srv.Close() }
}

// Client returns a client to a private redis-server, made as your code
// makes one: queue.NewRedisClient with your Redis URL.
func Client() (redis.UniversalClient, func()) {
	url, stop := URL()
	rdb, err := queue.NewRedisClient(url)
	if err != nil {
		stop()
		panic(err)
	}
	return rdb, func() { _ = rdb.Close(); stop() }
}
