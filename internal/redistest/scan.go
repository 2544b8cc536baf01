package redistest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// KeysHolding returns the keys matching pattern whose stored bytes hold
// needle anywhere: a string's value; a list's, set's or sorted set's
// members (and scores); a hash's fields and values; a stream's entries.
// It reads every such key through SCAN, so it is for a test's own server.
// Each master of a cluster client is scanned.
func KeysHolding(t testing.TB, rdb redis.UniversalClient, pattern string, needle []byte) []string {
	t.Helper()
	ctx := context.Background()
	var found []string
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			vals, err := values(ctx, c, key)
			if err != nil {
				return fmt.Errorf("read %q: %w", key, err)
			}
			for _, v := range vals {
				if bytes.Contains([]byte(v), needle) {
					found = append(found, key)
					break
				}
			}
		}
		return iter.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else if c, ok := rdb.(*redis.Client); ok {
		err = scan(ctx, c)
	} else {
		t.Fatalf("redistest: KeysHolding: a %T is neither a client nor a cluster client", rdb)
	}
	if err != nil {
		t.Fatalf("redistest: KeysHolding: %v", err)
	}
	return found
}

// values returns everything key holds, as strings.
func values(ctx context.Context, c *redis.Client, key string) ([]string, error) {
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	switch typ {
	case "string":
		v, err := c.Get(ctx, key).Result()
		return []string{v}, err
	case "list":
		return c.LRange(ctx, key, 0, -1).Result()
	case "set":
		return c.SMembers(ctx, key).Result()
	case "zset":
		zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		out := make([]string, 0, 2*len(zs))
		for _, z := range zs {
			out = append(out, fmt.Sprint(z.Member), fmt.Sprint(z.Score))
		}
		return out, err
	case "hash":
		m, err := c.HGetAll(ctx, key).Result()
		out := make([]string, 0, 2*len(m))
		for k, v := range m {
			out = append(out, k, v)
		}
		return out, err
	case "stream":
		xs, err := c.XRange(ctx, key, "-", "+").Result()
		var out []string
		for _, x := range xs {
			for k, v := range x.Values {
				out = append(out, k, fmt.Sprint(v))
			}
		}
		return out, err
	case "none":
		return nil, nil // gone since the scan saw it
	}
	return nil, fmt.Errorf("type %q", typ)
}
