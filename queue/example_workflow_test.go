package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
	"github.com/shardq/shardq/worker"
)

func ExampleClient_EnqueueWorkflow() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	published := make(chan string, 1)
	mux := worker.NewMux()
	mux.HandleFunc("video:download", func(ctx context.Context, t *worker.Task) error {
		return t.SetResult(ctx, []byte("talk.mp4"))
	})
	mux.HandleFunc("video:thumbnail", func(ctx context.Context, t *worker.Task) error {
		return t.SetResult(ctx, []byte("talk.jpg"))
	})
	mux.HandleFunc("video:transcribe", func(ctx context.Context, t *worker.Task) error {
		return t.SetResult(ctx, []byte("talk.vtt"))
	})
	mux.HandleFunc("video:publish", func(ctx context.Context, t *worker.Task) error {
		// results by parent name
		thumb, err := t.ParentResult(ctx, "thumbnail")
		if err != nil {
			return err
		}
		subs, err := t.ParentResult(ctx, "transcribe")
		if err != nil {
			return err
		}
		published <- fmt.Sprintf("%s publishes %s and %s", node(t), thumb, subs)
		return nil
	})
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	wf := queue.NewWorkflow()
	wf.Add("download", queue.NewRawTask("video:download", nil))
	wf.Add("thumbnail", queue.NewRawTask("video:thumbnail", nil), queue.After("download"))
	wf.Add("transcribe", queue.NewRawTask("video:transcribe", nil), queue.After("download"))
	wf.Add("publish", queue.NewRawTask("video:publish", nil), queue.After("thumbnail"), queue.After("transcribe"))
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		panic(err)
	}
	fmt.Println(<-published)

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	info := waitWorkflow(ctx, insp, id, queue.StateSucceeded)
	fmt.Println(info.State, nodeStates(info))
	// Output:
	// publish publishes talk.jpg and talk.vtt
	// succeeded download=succeeded thumbnail=succeeded transcribe=succeeded publish=succeeded
}

// A parent that did not succeed means, to each child, what the edge
// between them says: the child fails, runs anyway, or is skipped.
func ExampleEdgePolicy() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	mux := worker.NewMux()
	mux.HandleFunc("import", func(ctx context.Context, t *worker.Task) error {
		return worker.SkipRetry(errors.New("the file is truncated"))
	})
	for _, typ := range []string{"index", "report", "cleanup", "email"} {
		mux.HandleFunc(typ, func(ctx context.Context, t *worker.Task) error { return nil })
	}
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	wf := queue.NewWorkflow()
	wf.Add("import", queue.NewRawTask("import", nil))
	wf.Add("index", queue.NewRawTask("index", nil), queue.After("import")) // EdgeFail
	wf.Add("report", queue.NewRawTask("report", nil), queue.Edge{Parent: "import", OnDead: queue.EdgeSkip})
	wf.Add("cleanup", queue.NewRawTask("cleanup", nil), queue.Edge{Parent: "import", OnDead: queue.EdgeRun})
	// below a skipped node, its children follow their own edges
	wf.Add("email", queue.NewRawTask("email", nil), queue.Edge{Parent: "report", OnDead: queue.EdgeRun})
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		panic(err)
	}

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	info := waitWorkflow(ctx, insp, id, queue.StateFailed)
	fmt.Println(info.State, nodeStates(info))
	fmt.Println(info.Why)
	// Output:
	// failed import=dead index=failed report=skipped cleanup=succeeded email=succeeded
	// node import is dead: worker: skip retry: the file is truncated
}

// Add reports nothing: the first invalid node is the workflow's error, and
// EnqueueWorkflow writes nothing then.
func ExampleWorkflow_Add() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	client, _ := queue.NewClient(rdb, queue.Config{})

	cycle := queue.NewWorkflow()
	cycle.Add("a", queue.NewRawTask("a", nil), queue.After("b"))
	cycle.Add("b", queue.NewRawTask("b", nil), queue.After("a"))
	_, err := client.EnqueueWorkflow(ctx, cycle)
	fmt.Println(err)

	spaced := queue.NewWorkflow()
	spaced.Add("pick lamp", queue.NewRawTask("pick", nil))
	_, err = client.EnqueueWorkflow(ctx, spaced)
	fmt.Println(err)

	twice := queue.NewWorkflow()
	twice.Add("a", queue.NewRawTask("a", nil))
	twice.Add("a", queue.NewRawTask("a", nil))
	_, err = client.EnqueueWorkflow(ctx, twice)
	fmt.Println(err)

	// a parent outside the workflow is checked at its home, in Redis
	orphan := queue.NewWorkflow()
	orphan.Add("b", queue.NewRawTask("b", nil), queue.After("a"))
	_, err = client.EnqueueWorkflow(ctx, orphan)
	fmt.Println(errors.Is(err, queue.ErrInvalid))
	// Output:
	// queue: invalid workflow: a cycle runs through node "a"
	// queue: invalid workflow: node name "pick lamp" has a space or control character
	// queue: invalid workflow: node "a" added twice
	// true
}

// A producer adds nodes to a running workflow. Its new nodes may name the
// workflow's nodes as parents.
func ExampleClient_ExtendWorkflow() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	extended := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("crawl", func(ctx context.Context, t *worker.Task) error {
		<-extended // keeps the workflow running until the producer added its nodes
		return nil
	})
	mux.HandleFunc("index", func(ctx context.Context, t *worker.Task) error { return nil })
	mux.HandleFunc("report", func(ctx context.Context, t *worker.Task) error { return nil })
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	wf := queue.NewWorkflow()
	wf.Add("crawl", queue.NewRawTask("crawl", nil))
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		panic(err)
	}
	more := queue.NewWorkflow()
	more.Add("index-en", queue.NewRawTask("index", []byte("en")), queue.After("crawl"))
	more.Add("index-fr", queue.NewRawTask("index", []byte("fr")), queue.After("crawl"))
	more.Add("report", queue.NewRawTask("report", nil), queue.After("index-en"), queue.After("index-fr"))
	if err := client.ExtendWorkflow(ctx, id, more); err != nil {
		panic(err)
	}
	close(extended)

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	info := waitWorkflow(ctx, insp, id, queue.StateSucceeded)
	fmt.Println(info.State, nodeStates(info))

	late := queue.NewWorkflow()
	late.Add("late", queue.NewRawTask("report", nil))
	err = client.ExtendWorkflow(ctx, id, late)
	fmt.Println(errors.Is(err, queue.ErrFinished))
	// Output:
	// succeeded crawl=succeeded index-en=succeeded index-fr=succeeded report=succeeded
	// true
}

// A handler fans out: it adds a node per part, and a join after the parts,
// to its own workflow.
func ExampleWorkflow_fanOut() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	joined := make(chan string, 1)
	mux := worker.NewMux()
	mux.HandleFunc("split", func(ctx context.Context, t *worker.Task) error {
		more := queue.NewWorkflow()
		var parts []queue.Edge
		for _, p := range []string{"part-1", "part-2", "part-3"} {
			// a child of this node: it waits for this handler to succeed
			more.Add(p, queue.NewRawTask("part", nil), queue.After(node(t)))
			parts = append(parts, queue.After(p))
		}
		more.Add("join", queue.NewRawTask("join", nil), parts...)
		return t.ExtendWorkflow(ctx, more)
	})
	mux.HandleFunc("part", func(ctx context.Context, t *worker.Task) error {
		return t.SetResult(ctx, []byte(node(t)+" done"))
	})
	mux.HandleFunc("join", func(ctx context.Context, t *worker.Task) error {
		var got []string
		for _, p := range []string{"part-1", "part-2", "part-3"} {
			r, err := t.ParentResult(ctx, p)
			if err != nil {
				return err
			}
			got = append(got, string(r))
		}
		joined <- strings.Join(got, ", ")
		return nil
	})
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	wf := queue.NewWorkflow()
	wf.Add("split", queue.NewRawTask("split", nil))
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		panic(err)
	}
	fmt.Println(<-joined)

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	info := waitWorkflow(ctx, insp, id, queue.StateSucceeded)
	fmt.Println(info.State, len(info.Nodes), info.Edges)
	// Output:
	// part-1 done, part-2 done, part-3 done
	// succeeded 5 6
}

func ExampleInspector_CancelWorkflow() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	started := make(chan struct{})
	mux := worker.NewMux()
	mux.HandleFunc("train", func(ctx context.Context, t *worker.Task) error {
		close(started)
		<-ctx.Done() // CancelWorkflow asks the running node to stop
		return ctx.Err()
	})
	mux.HandleFunc("evaluate", func(ctx context.Context, t *worker.Task) error { return nil })
	// a worker reads cancel requests at each heartbeat: a short one here
	server, _ := worker.NewServer(rdb, worker.Config{Heartbeat: 100 * time.Millisecond}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	wf := queue.NewWorkflow()
	wf.Add("train", queue.NewRawTask("train", nil))
	wf.Add("evaluate", queue.NewRawTask("evaluate", nil), queue.After("train"))
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		panic(err)
	}
	<-started

	insp, _ := queue.NewInspector(rdb, queue.Config{})
	if err := insp.CancelWorkflow(ctx, id); err != nil {
		panic(err)
	}
	// cancelled at once; finished once the running node has stopped
	var info *queue.WorkflowInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if info, err = insp.GetWorkflow(ctx, id); err == nil && !info.FinishedAt.IsZero() {
			break
		}
	}
	fmt.Println(info.State, nodeStates(info))
	fmt.Println(errors.Is(insp.CancelWorkflow(ctx, id), queue.ErrFinished))
	// Output:
	// cancelled train=dead evaluate=cancelled
	// true
}

// waitWorkflow polls workflow id until it is in state want, for up to
// 10s, and returns it as last read.
func waitWorkflow(ctx context.Context, insp *queue.Inspector, id string, want queue.State) *queue.WorkflowInfo {
	var info *queue.WorkflowInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if info, err = insp.GetWorkflow(ctx, id); err == nil && info.State == want {
			break
		}
	}
	if info == nil {
		info = &queue.WorkflowInfo{ID: id}
	}
	return info
}

// nodeStates lists a workflow's nodes as name=state, in the order they
// were added.
func nodeStates(info *queue.WorkflowInfo) string {
	var out []string
	for _, n := range info.Nodes {
		out = append(out, n.Name+"="+string(n.State))
	}
	return strings.Join(out, " ")
}

// ExampleBefore records a join with the graph, before the nodes that feed
// it exist: the fan-out adds each part before the join, which waits for
// all of them.
func ExampleBefore() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	mux := worker.NewMux()
	mux.HandleFunc("split", func(ctx context.Context, t *worker.Task) error {
		more := queue.NewWorkflow()
		for _, part := range []string{"a", "b", "c"} {
			more.Add("part-"+part, queue.NewRawTask("part", []byte(part)), queue.After("split"), queue.Before("join"))
		}
		return t.ExtendWorkflow(ctx, more)
	})
	mux.HandleFunc("part", func(ctx context.Context, t *worker.Task) error { return nil })
	mux.HandleFunc("join", func(ctx context.Context, t *worker.Task) error { return nil })
	server, _ := worker.NewServer(rdb, worker.Config{}, mux)
	_ = server.Start(ctx)
	defer server.Shutdown(ctx)

	client, _ := queue.NewClient(rdb, queue.Config{})
	wf := queue.NewWorkflow()
	wf.Add("split", queue.NewRawTask("split", nil))
	wf.Add("join", queue.NewRawTask("join", nil), queue.After("split"))
	id, err := client.EnqueueWorkflow(ctx, wf)
	if err != nil {
		panic(err)
	}
	insp, _ := queue.NewInspector(rdb, queue.Config{})
	info := waitWorkflow(ctx, insp, id, queue.StateSucceeded)
	fmt.Println(info.State, nodeStates(info))
	var parents []string
	for _, e := range info.Node("join").Parents {
		parents = append(parents, e.Parent)
	}
	fmt.Println("join after", parents)
	// Output:
	// succeeded split=succeeded join=succeeded part-a=succeeded part-b=succeeded part-c=succeeded
	// join after [split part-a part-b part-c]
}

// node returns the name of t's node in its workflow.
func node(t *worker.Task) string {
	_, n := t.Workflow()
	return n
}
