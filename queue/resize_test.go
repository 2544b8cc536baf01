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
			if err := b.insp.SetPartitions(ctx, "q", n); !errors.Is(err, ErrInvalid) {
				t.Errorf("SetPartitions(q, %d) = %v, want ErrInvalid", n, err)
			}
		}
		if err := b.insp.SetPartitions(ctx, "bad name{", 2); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetPartitions with a bad name = %v, want ErrInvalid", err)
		}
		if l := layoutOf(t, b.insp, "q"); l != [2]int{1, 1} {
			t.Fatalf("layout after refused calls = %v; want 1 routed, 1 served", l)
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
		if err := b.insp.SetPartitions(ctx, "q", 2); err != nil {
			t.Fatal(err)
		}
		if l := layoutOf(t, b.insp, "q"); l != [2]int{2, 4} {
			t.Fatalf("layout after SetPartitions(q, 2) = %v; want 2 routed, 4 served", l)
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
		if err != nil || qi.Partitions != 4 || qi.Draining != 2 || qi.Pending != 41 {
			t.Fatalf("QueueInfo = %+v, %v; want the 4 partitions served, 2 draining, 41 pending", qi, err)
		}
		for _, named := range [][]string{nil, {"q"}} {
			all, err := b.insp.QueueInfos(ctx, named...)
			if err != nil || len(all) != 1 || all[0].Partitions != 4 || all[0].Draining != 2 {
				t.Fatalf("QueueInfos(%v) = %+v, %v; want q with 4 partitions, 2 draining", named, all, err)
			}
		}
		// raising again opens the closed ones
		if err := b.insp.SetPartitions(ctx, "q", 4); err != nil {
			t.Fatal(err)
		}
		if l := layoutOf(t, b.insp, "q"); l != [2]int{4, 4} {
			t.Fatalf("layout after SetPartitions(q, 4) = %v; want 4 routed, 4 served", l)
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
		if err := b.insp.SetPartitions(ctx, "q", 3); err != nil {
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
		if err := b.insp.SetPartitions(ctx, "q", 3); err != nil {
			t.Fatal(err)
		}
		if err := b.insp.DeleteQueue(ctx, "q", true); err != nil {
			t.Fatal(err)
		}
		if _, err := b.insp.QueueInfo(ctx, "q"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("QueueInfo of a deleted queue = %v, want ErrNotFound", err)
		}
		if n, _ := b.rdb.HLen(ctx, b.cfg.Prefix+":layout").Result(); n != 0 {
			t.Fatalf("the layout hash holds %d entries after DeleteQueue", n)
		}
	})
}

// layoutOf returns queue's partitions as QueueInfo shows them: {routed to,
// served}.
func layoutOf(t *testing.T, insp *Inspector, queue string) [2]int {
	t.Helper()
	qi, err := insp.QueueInfo(context.Background(), queue)
	if err != nil {
		t.Fatalf("QueueInfo(%q): %v", queue, err)
	}
	return [2]int{qi.Partitions - qi.Draining, qi.Partitions}
}

// TestFirstCallReadsTheLayout: a producer whose Config counts more
// partitions than an operator's layout serves reads the layout before
// its first call to the queue routes anything. It routed that call by its
// Config in the same round trip that read the layout, and put tasks in
// partitions that never existed, refused nothing and no worker served:
// they waited for good (found writing docs/protocol.md). A workflow's
// nodes are routed the same way.
func TestFirstCallReadsTheLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, Config{})
	if _, err := b.client.Enqueue(ctx, NewRawTask("t", nil, In("q"))); err != nil {
		t.Fatal(err)
	}
	if err := b.insp.SetPartitions(ctx, "q", 4); err != nil {
		t.Fatal(err)
	}
	if l := layoutOf(t, b.insp, "q"); l != [2]int{4, 4} {
		t.Fatalf("layout %v, want 4 routed and served", l)
	}
	wide := b.cfg
	wide.Partitions = map[string]int{"q": 8}
	for _, call := range []string{"Enqueue", "EnqueueMany", "EnqueueWorkflow"} {
		c, err := NewClient(b.rdb, wide)
		if err != nil {
			t.Fatal(err)
		}
		var parts []int
		switch call {
		case "Enqueue":
			for range 16 {
				info, err := c.Enqueue(ctx, NewRawTask("t", nil, In("q")))
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, info.Partition)
			}
		case "EnqueueMany":
			tasks := make([]*Task, 64)
			for i := range tasks {
				tasks[i] = NewRawTask("t", nil, In("q"))
			}
			infos, err := c.EnqueueMany(ctx, tasks)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				parts = append(parts, in.Partition)
			}
		case "EnqueueWorkflow":
			w := NewWorkflow()
			for i := range 16 {
				w.Add(fmt.Sprint("n", i), NewRawTask("t", nil, In("q")))
			}
			id, err := c.EnqueueWorkflow(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			wi, err := b.insp.GetWorkflow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range wi.Nodes {
				ti, err := b.insp.GetTask(ctx, "q", n.TaskID)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, ti.Partition)
			}
		}
		for _, p := range parts {
			if p >= 4 {
				t.Fatalf("%s: a task went to partition %d, past the 4 the layout serves (partitions %v)", call, p, parts)
			}
		}
	}
}
