package lua

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/shardq/shardq/internal/redistest"
)

func TestCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	p := "{" + redistest.Prefix(t) + "}"

	t.Run("RestoredFromStartPoint", func(t *testing.T) {
		c := &SafeCounter{Key: p + ":c1", StartFrom: p + ":z1"}
		must(t, rdb.ZAdd(ctx, p+":z1", redis.Z{Score: 41, Member: "x"}, redis.Z{Score: 7, Member: "y"}).Err())
		v, err := c.IncrBy(ctx, rdb, 1)
		if err != nil || v != 42 {
			t.Fatalf("IncrBy on a missing counter = %d, %v; want 42 (highest score + 1)", v, err)
		}
		v, err = c.IncrBy(ctx, rdb, 3)
		if err != nil || v != 45 {
			t.Fatalf("IncrBy = %d, %v; want 45", v, err)
		}
	})

	t.Run("NoStartPointIsAnError", func(t *testing.T) {
		for _, c := range []*SafeCounter{
			{Key: p + ":c2"},
			{Key: p + ":c3", StartFrom: p + ":empty"},
		} {
			v, err := c.IncrBy(ctx, rdb, 1)
			if !errors.Is(err, ErrCounterMissing) {
				t.Fatalf("IncrBy = %d, %v; want ErrCounterMissing", v, err)
			}
			if n := rdb.Exists(ctx, c.Key).Val(); n != 0 {
				t.Fatalf("a failed IncrBy wrote the counter")
			}
		}
	})

	t.Run("InitThenCount", func(t *testing.T) {
		c := &SafeCounter{Key: p + ":c4"}
		created, err := c.Init(ctx, rdb, 100)
		if err != nil || !created {
			t.Fatalf("Init = %v, %v", created, err)
		}
		if created, _ := c.Init(ctx, rdb, 0); created {
			t.Fatal("Init overwrote an existing counter")
		}
		if v, err := c.IncrBy(ctx, rdb, 1); err != nil || v != 101 {
			t.Fatalf("IncrBy = %d, %v", v, err)
		}
	})
}
