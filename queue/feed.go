package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/lua"
)

// Feed names one of a queue partition's ranked feeds.
type Feed string

// The ranked feeds of a queue partition.
const (
	FeedRecent Feed = "recent" // every task enqueued, newest FeedSize kept
	FeedDone   Feed = "done"   // tasks that succeeded with a Retention
	FeedDead   Feed = "dead"   // tasks that will not run again
)

// FeedQuery selects a page of a feed.
type FeedQuery struct {
	Queue     string
	Partition int
	Feed      Feed
	// After is the marker: the ID of the last task of the previous page;
	// "" starts at the beginning (the oldest, or the newest with Newest).
	After string
	// Limit bounds the page. Defaults to 50.
	Limit int
	// Newest pages from the newest entry back; otherwise oldest first.
	Newest bool
}

// FeedPage is one page of a feed.
type FeedPage struct {
	Tasks []*TaskInfo
	// Next is the marker of the following page: the last task's ID, or the
	// query's own marker when the page is empty (nothing newer yet).
	Next string
}

// ReadFeed returns the page of q.Feed after q.After in one round trip. A
// reader that follows Next never misses an entry nor sees one twice, while
// any number of producers append. Entries whose task has left Redis
// (finished without retention) still come back, with only ID and Rank set.
// When the marker itself has left the feed it fails with ErrMarkerNotFound.
func (i *Inspector) ReadFeed(ctx context.Context, q FeedQuery) (*FeedPage, error) {
	if err := ValidateQueueName(q.Queue); err != nil {
		return nil, err
	}
	k := keys.For(i.cfg.Prefix, q.Queue, q.Partition)
	var feedKey string
	switch q.Feed {
	case FeedRecent, "":
		feedKey = k.Feed()
	case FeedDone:
		feedKey = k.Done()
	case FeedDead:
		feedKey = k.Dead()
	default:
		return nil, fmt.Errorf("%w: feed %q, want recent, done or dead", ErrInvalidOption, q.Feed)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	order := lua.Oldest
	if q.Newest {
		order = lua.Newest
	}
	var res any
	err := rcall.Do(ctx, i.rdb, func() (err error) {
		res, err = script.ReadFeed.Run(ctx, i.rdb, []string{feedKey, k.Msg(), k.State(), k.FeedMsg()}, wire.StoredID(q.After), limit, string(order)).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read feed %s of %q: %w", q.Feed, q.Queue, err)
	}
	return parseFeedReply(q, res)
}

func parseFeedReply(q FeedQuery, res any) (*FeedPage, error) {
	if code, ok := res.(int64); ok && code == -1 {
		return nil, fmt.Errorf("%w: %q in feed %s of %q", ErrMarkerNotFound, q.After, q.Feed, q.Queue)
	}
	flat, _ := res.([]any)
	page := &FeedPage{Next: q.After}
	for j := 0; j+3 < len(flat); j += 4 {
		id, _ := flat[j].(string)
		entries, err := lua.ParseFeedPage([]any{flat[j], flat[j+1]}, "")
		if err != nil || len(entries) != 1 {
			return nil, errors.Join(fmt.Errorf("read feed: bad entry %v", flat[j:j+2]), err)
		}
		msg, hasMsg := flat[j+2].(string)
		rec, _ := flat[j+3].(string)
		ti := &TaskInfo{ID: wire.PublicID(id), Queue: q.Queue, Partition: q.Partition}
		if hasMsg { // nil: none left; "" is a message, if a malformed one
			ti = taskFromReply(q.Queue, q.Partition, id, msg, rec)
		}
		ti.Rank = entries[0].Rank
		page.Tasks = append(page.Tasks, ti)
		page.Next = wire.PublicID(id)
	}
	return page, nil
}
