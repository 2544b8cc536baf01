package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/queue"
)

// Bounds of the search for other prefixes: it reads at most scanBudget
// keys per Redis server, a few dozen SCAN calls, and stops once it found
// maxPrefixes, so a Redis of millions of keys answers in well under a
// second instead of being walked.
const (
	scanBudget  = 100_000
	scanCount   = 1000
	maxPrefixes = 20
)

// prefixScan is what the search for registries found.
type prefixScan struct {
	prefixes []string // sorted
	scanned  int64    // keys SCAN read, over every server
	complete bool     // every server's keyspace was read to its end
}

// findPrefixes finds the key prefixes that have queues: the keys
// "<prefix>:queues" (keys.Queues) that are hashes, with SCAN MATCH and
// TYPE, on every master of a cluster. A prefix holds no braces
// (config.CheckName), so a partition's key never matches.
func findPrefixes(ctx context.Context, rdb redis.UniversalClient) (*prefixScan, error) {
	res := &prefixScan{complete: true}
	var mu sync.Mutex
	found := map[string]bool{}
	scan := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		var read int64
		for {
			ks, next, err := c.ScanType(ctx, cursor, keys.Queues("*"), scanCount, "hash").Result()
			if err != nil {
				return fmt.Errorf("scan for key prefixes: %w", err)
			}
			read += scanCount
			mu.Lock()
			for _, k := range ks {
				if p, ok := strings.CutSuffix(k, keys.Queues("")); ok && p != "" && !strings.ContainsAny(p, "{}") {
					found[p] = true
				}
			}
			full := len(found) >= maxPrefixes
			mu.Unlock()
			cursor = next
			if cursor == 0 {
				break
			}
			if read >= scanBudget || full {
				mu.Lock()
				res.complete = false
				mu.Unlock()
				break
			}
		}
		mu.Lock()
		res.scanned += read
		mu.Unlock()
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return nil, fmt.Errorf("scan for key prefixes: a %T cannot scan", rdb)
	}
	if err != nil {
		return nil, err
	}
	for p := range found {
		res.prefixes = append(res.prefixes, p)
	}
	slices.Sort(res.prefixes)
	if len(res.prefixes) > maxPrefixes {
		res.prefixes, res.complete = res.prefixes[:maxPrefixes], false // a line an operator reads
	}
	return res, nil
}

// errNoQueues is the error of a command that found nothing because its
// prefix has no queues; the message lists the prefixes that have some.
type errNoQueues struct {
	prefix string
	scan   *prefixScan
}

func (e *errNoQueues) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no queues under key prefix %q", e.prefix)
	switch {
	case e.scan == nil:
	case len(e.scan.prefixes) > 0:
		fmt.Fprintf(&b, "; prefixes with queues: %s (pass one with --prefix)", strings.Join(e.scan.prefixes, ", "))
		if !e.scan.complete {
			b.WriteString(", and maybe others this search did not list")
		}
	case e.scan.complete:
		b.WriteString(", nor under any other prefix: nothing was enqueued and no worker ran yet")
	default:
		fmt.Fprintf(&b, ", and none under another among the first %d keys read", e.scan.scanned)
	}
	return b.String()
}

// noQueues returns an *errNoQueues when insp's prefix has no queues, nil
// when it has some. It reads the registry (Inspector.Queues), then, only
// when it is empty, scans for the prefixes that have queues.
func noQueues(ctx context.Context, rdb redis.UniversalClient, insp *queue.Inspector, prefix string) error {
	names, err := insp.Queues(ctx)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return nil
	}
	scan, err := findPrefixes(ctx, rdb)
	if err != nil {
		return err
	}
	return &errNoQueues{prefix: prefix, scan: scan}
}

// warnPrefix warns on stderr when prefix has no queues while others have
// some, then says what follows (then): a command that writes (enqueue, a
// worker's start) goes on, since writing is how a prefix starts, but a
// mistyped --prefix would leave its tasks where no worker looks. A Redis
// with no queues at all gets no warning: nothing to mistake.
func warnPrefix(ctx context.Context, m *Main, rdb redis.UniversalClient, insp *queue.Inspector, prefix, then string) error {
	var none *errNoQueues
	err := noQueues(ctx, rdb, insp, prefix)
	switch {
	case errors.As(err, &none):
		if len(none.scan.prefixes) > 0 {
			fmt.Fprintf(m.Stderr, "warning: %v; %s\n", none, then)
		}
		return nil
	}
	return err
}
