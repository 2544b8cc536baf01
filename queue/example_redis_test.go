package queue_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

// exampleRedisURL starts a private redis-server for an example and returns
// its URL; in your code, use the URL of your own Redis.
func exampleRedisURL() (url string, stop func()) {
	srv, err := redisproc.Start()
	if err != nil {
		panic(err)
	}
	return srv.URL(), func() { srv.Close() }
}

// exampleRedis returns a client to a private redis-server, made as your
// code makes one: queue.NewRedisClient with your Redis URL.
func exampleRedis() (redis.UniversalClient, func()) {
	url, stop := exampleRedisURL()
	rdb, err := queue.NewRedisClient(url)
	if err != nil {
		stop()
		panic(err)
	}
	return rdb, func() { rdb.Close(); stop() }
}
