package envelope

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// DictKey is the Redis key of dictionary id under prefix.
func DictKey(prefix, id string) string { return prefix + ":dict:" + id }

// dictReadTimeout bounds one read of a dictionary: a reader that cannot
// have it soon treats it as unavailable, and tries again later.
const dictReadTimeout = 5 * time.Second

// RedisDicts returns Dicts that read dictionaries from rdb, under prefix.
func RedisDicts(rdb redis.UniversalClient, prefix string) *Dicts {
	return &Dicts{Load: func(id string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), dictReadTimeout)
		defer cancel()
		b, err := rdb.Get(ctx, DictKey(prefix, id)).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		return b, err
	}}
}
