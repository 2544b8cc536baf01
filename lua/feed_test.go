package lua

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/redistest"
)

func TestFeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)

	t.Run("ContiguousRanksAndPaging", func(t *testing.T) {
		f := &RankedFeed{Key: "{" + redistest.Prefix(t) + "}:feed"}
		first, _, err := f.Append(ctx, rdb, "a", "b", "c")
		must(t, err)
		second, _, err := f.Append(ctx, rdb, "d", "e")
		must(t, err)
		if first != 1 || second != 4 {
			t.Fatalf("first ranks %d and %d, want 1 and 4", first, second)
		}
		page, err := f.Read(ctx, rdb, "", 2, Oldest)
		must(t, err)
		next, err := f.Read(ctx, rdb, page[len(page)-1].Member, 10, Oldest)
		must(t, err)
		if got := members(append(page, next...)); got != "a b c d e" {
			t.Fatalf("paged oldest first: %s", got)
		}
		newest, err := f.Read(ctx, rdb, "", 2, Newest)
		must(t, err)
		older, err := f.Read(ctx, rdb, "d", 10, Newest)
		must(t, err)
		if members(newest) != "e d" || members(older) != "c b a" {
			t.Fatalf("newest first: %s then %s", members(newest), members(older))
		}
		if newest[0].Rank != 5 {
			t.Fatalf("newest rank %d, want 5", newest[0].Rank)
		}
	})

	t.Run("CapTrimsOldestAndReportsThem", func(t *testing.T) {
		f := &RankedFeed{Key: "{" + redistest.Prefix(t) + "}:feed", Cap: 3}
		_, trimmed, err := f.Append(ctx, rdb, "a", "b")
		must(t, err)
		if len(trimmed) != 0 {
			t.Fatalf("trimmed %v under the cap", trimmed)
		}
		_, trimmed, err = f.Append(ctx, rdb, "c", "d", "e")
		must(t, err)
		if fmt.Sprint(trimmed) != "[a b]" {
			t.Fatalf("trimmed %v, want [a b]", trimmed)
		}
		if n := rdb.ZCard(ctx, f.Key).Val(); n != 3 {
			t.Fatalf("feed holds %d, cap 3", n)
		}
		_, err = f.Read(ctx, rdb, "a", 10, Oldest)
		if !errors.Is(err, ErrMarkerNotFound) {
			t.Fatalf("reading after a trimmed marker: err = %v, want ErrMarkerNotFound", err)
		}
	})

	t.Run("LostCounterRestartsAboveHighestRank", func(t *testing.T) {
		f := &RankedFeed{Key: "{" + redistest.Prefix(t) + "}:feed"}
		_, _, err := f.Append(ctx, rdb, "a", "b", "c")
		must(t, err)
		must(t, rdb.Del(ctx, f.rankKey()).Err()) // evicted, or lost in a failover
		first, _, err := f.Append(ctx, rdb, "d")
		must(t, err)
		if first != 4 {
			t.Fatalf("rank after losing the counter = %d, want 4 (never restarted at 1)", first)
		}
		page, err := f.Read(ctx, rdb, "c", 10, Oldest)
		must(t, err)
		if members(page) != "d" {
			t.Fatalf("reader after c sees %s, want d", members(page))
		}
	})

	t.Run("LargeCapTrimsEveryStepAppends", func(t *testing.T) {
		// cap 1024: trimmed once per 64 ranks, so between trims the feed
		// holds at most cap+63, and a trim leaves exactly cap
		f := &RankedFeed{Key: "{" + redistest.Prefix(t) + "}:feed", Cap: 1024}
		var all []string
		for i := range 1024 {
			all = append(all, fmt.Sprint(i))
		}
		_, _, err := f.Append(ctx, rdb, all...)
		must(t, err)
		maxSeen := int64(0)
		var trimmedAll []string
		for i := range 200 {
			_, trimmed, err := f.Append(ctx, rdb, fmt.Sprint("n", i))
			must(t, err)
			trimmedAll = append(trimmedAll, trimmed...)
			n := rdb.ZCard(ctx, f.Key).Val()
			maxSeen = max(maxSeen, n)
			if len(trimmed) > 0 && n != 1024 {
				t.Fatalf("after a trim the feed holds %d, want 1024", n)
			}
		}
		if maxSeen > 1024+63 {
			t.Fatalf("the feed grew to %d, want at most cap+63", maxSeen)
		}
		// 1224 appended, 1024 kept: the oldest 200 or fewer went, oldest first
		if n := rdb.ZCard(ctx, f.Key).Val(); int(n)+len(trimmedAll) != 1224 {
			t.Fatalf("%d kept + %d trimmed, want 1224", n, len(trimmedAll))
		}
		for i, m := range trimmedAll {
			if m != fmt.Sprint(i) {
				t.Fatalf("trimmed[%d] = %q, want the oldest first", i, m)
			}
		}
	})

	t.Run("BadLimit", func(t *testing.T) {
		f := &RankedFeed{Key: "{x}:feed"}
		if _, err := f.Read(ctx, rdb, "", 0, Oldest); !errors.Is(err, ErrInvalid) {
			t.Fatalf("limit 0: err = %v", err)
		}
	})
}

// TestFeedReadersNeverMissWhileWritersAppend: several writers append
// batches while several readers tail the feed by marker; every reader sees
// every entry exactly once, in rank order.
func TestFeedReadersNeverMissWhileWritersAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	f := &RankedFeed{Key: "{" + redistest.Prefix(t) + "}:feed"}
	const writers, perWriter, readers = 4, 500, 3
	total := writers * perWriter

	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; {
				n := min(1+rand.IntN(20), perWriter-i)
				batch := make([]string, n)
				for k := range batch {
					batch[k] = fmt.Sprintf("w%d-%d", w, i+k)
				}
				if _, _, err := f.Append(ctx, rdb, batch...); err != nil {
					t.Error(err)
					return
				}
				i += n
			}
		}()
	}
	seen := make([][]FeedEntry, readers)
	deadline := time.Now().Add(20 * time.Second)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			marker := ""
			for len(seen[r]) < total && time.Now().Before(deadline) {
				page, err := f.Read(ctx, rdb, marker, 1+rand.IntN(50), Oldest)
				if err != nil {
					t.Error(err)
					return
				}
				if len(page) > 0 {
					seen[r] = append(seen[r], page...)
					marker = page[len(page)-1].Member
				}
			}
		}()
	}
	wg.Wait()
	for r, entries := range seen {
		if len(entries) != total {
			t.Errorf("reader %d saw %d of %d entries", r, len(entries), total)
			continue
		}
		got := map[string]bool{}
		for i, e := range entries {
			if got[e.Member] {
				t.Fatalf("reader %d saw %s twice", r, e.Member)
			}
			got[e.Member] = true
			if e.Rank != int64(i+1) {
				t.Fatalf("reader %d: entry %d has rank %d: an entry was skipped", r, i, e.Rank)
			}
		}
	}
}

func members(es []FeedEntry) string {
	s := ""
	for i, e := range es {
		if i > 0 {
			s += " "
		}
		s += e.Member
	}
	return s
}
