package queue

import (
	"context"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/inspect"
)

// TestGroupPlacesTask: on a queue of 4 partitions, the tasks of a
// group all go to one partition (even with a uniqueness ID or a
// chosen ID), while tasks without a key spread over all of them.
func TestGroupPlacesTask(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Partitions: map[string]int{"wide": 4}})
	ctx := context.Background()
	parts := map[string]map[int]bool{}
	for i := range 40 {
		key := []string{"acme", "globex"}[i%2]
		opts := []Option{In("wide"), Group(key)}
		if i%5 == 0 {
			opts = append(opts, UniqueBy("u"+string(rune('a'+i)), time.Minute))
		}
		info, err := b.client.Enqueue(ctx, NewRawTask("t", nil), opts...)
		must(t, err)
		if parts[key] == nil {
			parts[key] = map[int]bool{}
		}
		parts[key][info.Partition] = true
	}
	for key, ps := range parts {
		if len(ps) != 1 {
			t.Fatalf("tasks of key %q went to partitions %v, want one", key, ps)
		}
	}
	spread := map[int]bool{}
	for range 8 {
		info, err := b.client.Enqueue(ctx, NewRawTask("t", nil), In("wide"))
		must(t, err)
		spread[info.Partition] = true
	}
	if len(spread) != 4 {
		t.Fatalf("tasks without a key went to partitions %v, want all 4", spread)
	}
}

// TestSetLimitsFleetWide: on a queue of 4 partitions SetLimits stores the
// limit once and splits it into quotas that sum to it; LimitInfo reports
// the limit, not a partition's share; removing the limit removes them.
func TestSetLimitsFleetWide(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Partitions: map[string]int{"wide": 4}})
	ctx := context.Background()
	must(t, b.insp.SetLimits(ctx, "wide", Limits{Concurrency: 10, Rate: 100, Per: time.Second, GroupConcurrency: 2}))
	li, err := b.insp.LimitInfo(ctx, "wide")
	must(t, err)
	if li.Limits != (Limits{Concurrency: 10, Rate: 100, Per: time.Second, GroupConcurrency: 2}) {
		t.Fatalf("LimitInfo.Limits = %+v", li.Limits)
	}
	quotas, err := inspect.Quotas(ctx, b.insp, "wide")
	must(t, err)
	conc, rate := 0, 0
	for p, q := range quotas {
		conc += q.Concurrency
		rate += q.Rate
		if q.Partition != p {
			t.Fatalf("quota %d names partition %d", p, q.Partition)
		}
	}
	if len(quotas) != 4 || conc != 10 || rate != 100 {
		t.Fatalf("quotas %+v: want 4 partitions sharing 10 and 100", quotas)
	}
	must(t, b.insp.SetLimits(ctx, "wide", Limits{}))
	li, err = b.insp.LimitInfo(ctx, "wide")
	must(t, err)
	quotas, err = inspect.Quotas(ctx, b.insp, "wide")
	must(t, err)
	for _, q := range quotas {
		if q.Concurrency != codes.None || q.Rate != codes.None {
			t.Fatalf("quotas after removing the limits: %+v, want none", quotas)
		}
	}
	// a queue of one partition holds its limits whole: no quotas
	must(t, b.insp.SetLimits(ctx, "narrow", Limits{Concurrency: 3}))
	if quotas, err := inspect.Quotas(ctx, b.insp, "narrow"); err != nil || quotas != nil {
		t.Fatalf("quotas of a queue of one partition: %+v, %v; want none", quotas, err)
	}
	if li.Limits != (Limits{}) {
		t.Fatalf("LimitInfo.Limits after removing them = %+v", li.Limits)
	}
}
