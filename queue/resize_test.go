package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardq/shardq/internal/config"
)

func TestSetPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("BadInputIsRefusedAndChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		_, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, -1, config.MaxPartitions + 1} {
			if _, err := b.insp.SetPartitions(ctx, "q", n); !errors.Is(err, ErrInvalid) {
				t.Errorf("SetPartitions(q, %d) = %v, want ErrInvalid", n, err)
			}
		}
		if _, err := b.insp.SetPartitions(ctx, "bad name{", 2); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetPartitions with a bad name = %v, want ErrInvalid", err)
		}
		l, err := b.insp.Layout(ctx, "q")
		if err != nil || l != (PartitionLayout{Route: 1, Serve: 1}) {
			t.Fatalf("Layout after refused calls = %+v, %v; want 1/1", l, err)
		}
	})

	t.Run("LoweringClosesAtOnceAndProducersRouteAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Partitions: map[string]int{"q": 4}})
		// the client has read the layout (none) just now: it routes to 4
		// partitions for LayoutRefresh yet
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q"))); err != nil {
			t.Fatal(err)
		}
		l, err := b.insp.SetPartitions(ctx, "q", 2)
		if err != nil || l != (PartitionLayout{Route: 2, Serve: 4}) {
			t.Fatalf("SetPartitions(q, 2) = %+v, %v; want 2 routed, 4 served", l, err)
		}
		tasks := make([]*Task, 40)
		for i := range tasks {
			tasks[i] = NewRawTask("t", nil, In("q"), TaskID(fmt.Sprint("id-", i)))
		}
		infos, err := b.client.EnqueueMany(ctx, tasks)
		if err != nil {
			t.Fatalf("EnqueueMany over closed partitions: %v", err)
		}
		for _, in := range infos {
			if in.Partition >= 2 {
				t.Fatalf("task %s went to closed partition %d", in.ID, in.Partition)
			}
		}
		qi, err := b.insp.QueueInfo(ctx, "q")
		if err != nil || qi.Partitions != 4 || qi.Pending != 41 {
			t.Fatalf("QueueInfo = %+v, %v; want the 4 partitions served, 41 pending", qi, err)
		}
		// raising again opens the closed ones
		if l, err = b.insp.SetPartitions(ctx, "q", 4); err != nil || l != (PartitionLayout{Route: 4, Serve: 4}) {
			t.Fatalf("SetPartitions(q, 4) = %+v, %v", l, err)
		}
		fresh, err := NewClient(b.rdb, b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for i := range 16 {
			in, err := fresh.Enqueue(ctx, NewRawTask("t", nil, In("q")))
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 { // the first call learns the layout
				seen[in.Partition] = true
			}
		}
		if !seen[3] {
			t.Fatalf("no task went to reopened partition 3: %v", seen)
		}
	})

	t.Run("RaisingReachesARunningProducer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q"))); err != nil {
			t.Fatal(err)
		}
		if _, err := b.insp.SetPartitions(ctx, "q", 3); err != nil {
			t.Fatal(err)
		}
		// the client reads the layout again once LayoutRefresh passed, in
		// an enqueue's round trip, and routes to 3 from the call after
		b.client.routes.Forget()
		seen := map[int]bool{}
		for range 10 {
			in, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q")))
			if err != nil {
				t.Fatal(err)
			}
			seen[in.Partition] = true
		}
		if !seen[2] {
			t.Fatalf("tasks went to partitions %v, want 0..2", seen)
		}
	})

	t.Run("DeleteQueueForgetsTheLayout", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		if _, err := b.insp.SetPartitions(ctx, "q", 3); err != nil {
			t.Fatal(err)
		}
		if err := b.insp.DeleteQueue(ctx, "q", true); err != nil {
			t.Fatal(err)
		}
		if _, err := b.insp.Layout(ctx, "q"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Layout of a deleted queue = %v, want ErrNotFound", err)
		}
		if n, _ := b.rdb.HLen(ctx, b.cfg.Prefix+":layout").Result(); n != 0 {
			t.Fatalf("the layout hash holds %d entries after DeleteQueue", n)
		}
	})
}
