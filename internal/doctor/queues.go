package doctor

import (
	"context"
	"fmt"
	"sort"
)

// deletedQueues finds keys under the prefix of queues the registry
// (<prefix>:queues) does not name: what DeleteQueue left, or a queue's
// keys written after its deletion. Producers and workers register a queue
// before they write it, so a registered queue has no such keys.
func deletedQueues(ctx context.Context, a *audit, f *Finding) error {
	if len(a.foreign) == 0 {
		return nil
	}
	// a second look at the registry: a queue may have been registered since
	regNow, err := a.rdb.HKeys(ctx, registryKey(a)).Result()
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, q := range regNow {
		known[q] = true
	}
	names := make([]string, 0, len(a.foreign))
	for q := range a.foreign {
		names = append(names, q)
	}
	sort.Strings(names)
	for _, q := range names {
		if known[q] {
			continue
		}
		ks := a.foreign[q]
		sort.Strings(ks)
		a.add(f, fmt.Sprintf("queue %q: %d keys, e.g. %s", q, len(ks), ks[0]))
	}
	return nil
}
