// Package layout is the stored form of a queue's partition layout once an
// operator set its count (queue.Inspector.SetPartitions): the hash
// keys.Layout, queue name -> "<route>/<serve>". Producers route new tasks
// to partitions 0..route-1; workers serve, and readers count, partitions
// 0..serve-1. serve > route while the partitions route..serve-1 drain after
// the count was lowered; a worker sets serve = route once they hold
// nothing (lua/engine/layout_finish.lua). A queue without an entry keeps the
// count its Config gives (queue.Config.Partitions).
package layout

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
)

// Layout is one queue's partition layout.
type Layout struct {
	// Route is how many partitions producers route new tasks to.
	Route int
	// Serve is how many partitions workers serve and readers count:
	// Route, plus those still draining.
	Serve int
}

// Draining reports whether some partitions are still being drained.
func (l Layout) Draining() bool { return l.Serve > l.Route }

// String is the stored form, "<route>/<serve>".
func (l Layout) String() string { return strconv.Itoa(l.Route) + "/" + strconv.Itoa(l.Serve) }

// Parse reads the stored form. It refuses anything but two counts of 1 to
// config.MaxPartitions with route <= serve: readers size a pipeline and
// workers start a fetcher per partition, so a count from Redis is bounded
// as any other value read there.
func Parse(v string) (Layout, error) {
	r, s, ok := strings.Cut(v, "/")
	route, err1 := count(r)
	serve, err2 := count(s)
	if !ok || err1 != nil || err2 != nil || route < 1 || serve < route || serve > config.MaxPartitions {
		return Layout{}, fmt.Errorf("layout: bad stored layout %q, want <route>/<serve> of 1 to %d partitions", v, config.MaxPartitions)
	}
	return Layout{Route: route, Serve: serve}, nil
}

// ParseCount reads a value of the queue registry (keys.Queues): a
// queue's partition count, 1 to config.MaxPartitions. A count past it
// could not have been written by shardq, and sized what its readers
// allocate.
func ParseCount(v string) (int, error) {
	n, err := count(v)
	if err != nil || n < 1 || n > config.MaxPartitions {
		return 0, fmt.Errorf("layout: bad queue registry value %q, want a partition count of 1 to %d", v, config.MaxPartitions)
	}
	return n, nil
}

// count reads a decimal count: digits only, as docs/protocol.md says.
// strconv.Atoi alone took "+2" too, which clients in other languages,
// written from the spec, refuse: the two would route differently.
func count(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(s)
}

// ReadAll returns every queue's layout, in one HGETALL. Entries that do
// not parse are left out (the queue keeps its configured count).
func ReadAll(ctx context.Context, rdb redis.UniversalClient, prefix string) (map[string]Layout, error) {
	raw, err := rdb.HGetAll(ctx, keys.Layout(prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("read partition layouts: %w", err)
	}
	out := make(map[string]Layout, len(raw))
	for q, v := range raw {
		if l, err := Parse(v); err == nil {
			out[q] = l
		}
	}
	return out, nil
}

// Pick is the partition, of n, of a task placed by key (a concurrency
// key, a uniqueness ID or a chosen ID): FNV-1a of the key modulo n. Producers
// and flow deliveries share it, so a key's tasks meet in one partition.
func Pick(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}
