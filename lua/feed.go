package lua

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/shardq/shardq/internal/codes"
)

// RankedFeed is a ranked feed: a sorted set of members scored by ranks that a
// counter hands out inside the appending script, so a reader paging with a
// marker (the last member it saw) never misses an entry. Key holds the
// feed, Key+":rank" its counter. Cap bounds the feed to its newest members
// (0 = unbounded). The feed is trimmed once per Cap/16 appends, at most
// 256, so it holds up to that many members more between trims.
type RankedFeed struct {
	Key string
	Cap int
}

// FeedEntry is one member of a feed and its rank.
type FeedEntry struct {
	Member string
	Rank   int64
}

// Order is the direction a feed is read in.
type Order string

// The orders a feed can be read in.
const (
	Oldest Order = "asc"  // oldest first: "after" means newer than the marker
	Newest Order = "desc" // newest first: "after" means older than the marker
)

// rankKey returns the key of the feed's rank counter.
func (f *RankedFeed) rankKey() string { return f.Key + ":rank" }

// Append adds members with a contiguous run of ranks, trims the feed to
// Cap when a trim is due, and returns the first rank given and the
// members trimmed away.
func (f *RankedFeed) Append(ctx context.Context, c redis.Scripter, members ...string) (first int64, trimmed []string, err error) {
	if len(members) == 0 {
		return 0, nil, nil
	}
	args := make([]any, 0, 1+len(members))
	args = append(args, f.Cap)
	for _, m := range members {
		args = append(args, m)
	}
	res, err := feedAppend.Run(ctx, c, []string{f.Key, f.rankKey()}, args...).Slice()
	if err != nil {
		return 0, nil, err
	}
	first, _ = res[0].(int64)
	for _, v := range res[1:] {
		trimmed = append(trimmed, v.(string))
	}
	return first, trimmed, nil
}

// Read returns up to limit entries after the marker member ("" = from the
// start) in the given order. It fails with ErrMarkerNotFound when the
// marker has left the feed.
func (f *RankedFeed) Read(ctx context.Context, c redis.Scripter, marker string, limit int, order Order) ([]FeedEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: feed page limit %d, want > 0", ErrInvalid, limit)
	}
	res, err := feedRead.Run(ctx, c, []string{f.Key}, marker, limit, string(order)).Result()
	if err != nil {
		return nil, err
	}
	return parseFeedPage(res, marker)
}

// parseFeedPage turns a feed_page reply ({member, rank, ...} or -1) into entries.
func parseFeedPage(res any, marker string) ([]FeedEntry, error) {
	if code, ok := res.(int64); ok && code == codes.MarkerNotFound {
		return nil, fmt.Errorf("%w: %q", ErrMarkerNotFound, marker)
	}
	flat, _ := res.([]any)
	out := make([]FeedEntry, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m, _ := flat[i].(string)
		out = append(out, FeedEntry{Member: m, Rank: parseRank(flat[i+1])})
	}
	return out, nil
}

// parseRank reads a score as Redis returns it inside a script reply (a
// string in RESP2); ranks are integers well below 2^53.
func parseRank(v any) int64 {
	switch r := v.(type) {
	case int64:
		return r
	case string:
		var n int64
		_, _ = fmt.Sscan(r, &n)
		return n
	}
	return 0
}
