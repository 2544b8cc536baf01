package worker_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/exampleredis"
)

// exampleRedis returns a client to a private redis-server started for an
// example; in your code, connect to your own Redis.
func exampleRedis() (redis.UniversalClient, func()) { return exampleredis.Client() }
