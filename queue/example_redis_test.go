package queue_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/exampleredis"
)

// exampleRedisURL starts a private redis-server for an example and returns
// its URL; in your code, use the URL of your own Redis.
func exampleRedisURL() (url string, stop func()) { return exampleredis.URL() }

// exampleRedis returns a client to a private redis-server started for an
// example; in your code, connect to your own Redis.
func exampleRedis() (redis.UniversalClient, func()) { return exampleredis.Client() }
