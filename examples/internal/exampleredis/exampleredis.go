// Package exampleredis gives each example its Redis: $SHARDQ_REDIS_URL or
// $REDIS_URL when set (as the shardq binary reads them), else a private
// redis-server on a free loopback port, started for the example and
// stopped after it. Either way the example's keys are deleted at the end,
// so running one leaves nothing behind.
package exampleredis

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
	"github.com/shardq/shardq/queue"
)

// Redis is an example's Redis connection.
type Redis struct {
	// URL is the server's URL, for the shardq binary or another process.
	URL string
	// Client is configured as shardq needs it (queue.NewRedisClient).
	Client redis.UniversalClient

	prefix string
	srv    *redisproc.Server // nil when the URL came from the environment
}

// Connect connects to the example's Redis, whose keys are under prefix
// (queue.Config.Prefix). It exits the program when there is none.
func Connect(prefix string) *Redis {
	r := &Redis{prefix: prefix, URL: cmp.Or(os.Getenv("SHARDQ_REDIS_URL"), os.Getenv("REDIS_URL"))}
	if r.URL == "" {
		srv, err := redisproc.Start()
		if err != nil {
			log.Fatalf("no REDIS_URL, and a private redis-server did not start (apt-get install -y redis-server): %v", err)
		}
		r.srv, r.URL = srv, srv.URL()
		fmt.Printf("(a private redis-server at %s, stopped at the end; set REDIS_URL to use yours)\n", srv.Addr)
	}
	rdb, err := queue.NewRedisClient(r.URL)
	if err != nil {
		r.stop()
		log.Fatal(err)
	}
	r.Client = rdb
	return r
}

// Close deletes the example's keys, closes the client and stops the
// private server.
func (r *Redis) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// keys are "{prefix:queue:partition}:..." or "prefix:..."
	for _, pattern := range []string{"{" + r.prefix + ":*", r.prefix + ":*"} {
		var keys []string
		iter := r.Client.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for _, k := range keys { // one by one: on a Cluster they live in many slots
			r.Client.Del(ctx, k)
		}
	}
	r.Client.Close()
	r.stop()
}

func (r *Redis) stop() {
	if r.srv != nil {
		_ = r.srv.Close()
	}
}
