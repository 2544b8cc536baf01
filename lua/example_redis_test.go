package lua_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

// exampleRedis returns a client to a private redis-server started for an
// example; in your code, connect to your own Redis.
func exampleRedis() (*redis.Client, func()) {
	srv, err := redisproc.Start()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	return rdb, func() { rdb.Close(); srv.Close() }
}
