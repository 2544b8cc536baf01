package tracing_test

import "github.com/shardq/shardq/internal/exampleredis"

// exampleRedisURL starts a private redis-server for an example and returns
// its URL; in your code, use the URL of your own Redis.
func exampleRedisURL() (url string, stop func()) { return exampleredis.URL() }
