package worker_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

// exampleRedis returns a client to a private redis-server started for an
// example, made as your code makes one: queue.NewRedisClient with the URL
// of your own Redis.
func exampleRedis() (redis.UniversalClient, func()) {
	srv, err := redisproc.Start()
	if err != nil {
		panic(err)
	}
	rdb, err := queue.NewRedisClient(srv.URL())
	if err != nil {
		srv.Close()
		panic(err)
	}
	return rdb, func() { rdb.Close(); srv.Close() }
}
