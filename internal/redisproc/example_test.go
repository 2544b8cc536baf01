package redisproc_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redisproc"
)

func Example() {
	srv, err := redisproc.Start()
	if err != nil {
		log.Fatal(err) // redisproc.ErrNotInstalled if redis-server is missing
	}
	defer srv.Close() // kills the server and removes its temporary directory

	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	fmt.Println(rdb.Ping(context.Background()).Val())
	// Output: PONG
}

func ExampleServer_Restart() {
	srv, err := redisproc.Start(redisproc.WithAOF())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()

	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		log.Fatal(err)
	}
	if err := srv.Kill(); err != nil { // a crash
		log.Fatal(err)
	}
	if err := srv.Restart(); err != nil { // same port, same directory
		log.Fatal(err)
	}
	fmt.Println(rdb.Get(ctx, "greeting").Val())
	// Output: hello
}
