package home_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// TestDeliverTwice: an outbox entry delivered again (a deliverer died
// between the enqueue and the removal) enqueues nothing more; an entry
// whose delivery does not decode, or is gone, is removed.
func TestDeliverTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	env := &home.Env{RDB: rdb, Prefix: prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	m := &wire.Message{ID: wire.NewID(), Type: "t", EnqueuedAt: 1}
	msg, _ := m.Encode()
	enc, err := wire.EncodeDelivery(&wire.Delivery{Queue: "q", Partitions: 1, ID: m.ID, Msg: msg})
	if err != nil {
		t.Fatal(err)
	}
	h := keys.Home(prefix, 3)
	put := func(id, entry string) {
		t.Helper()
		if err := rdb.ZAdd(ctx, h.Out(), redisZ(id)).Err(); err != nil {
			t.Fatal(err)
		}
		if entry != "" {
			if err := rdb.HSet(ctx, h.OutMsg(), id, entry).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		put(m.ID, string(enc))
		n, err := env.Deliver(ctx, []int{3})
		if err != nil || n != 1 {
			t.Fatalf("Deliver: %d, %v", n, err)
		}
	}
	put("junk", "not a delivery")
	put("gone", "")
	if n, err := env.Deliver(ctx, []int{3}); err != nil || n != 2 {
		t.Fatalf("Deliver of a junk and a gone entry: %d, %v", n, err)
	}
	if n := rdb.ZCard(ctx, h.Out()).Val() + rdb.HLen(ctx, h.OutMsg()).Val(); n != 0 {
		t.Fatalf("outbox keeps %d entries", n)
	}
	insp, err := queue.NewInspector(rdb, queue.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	qi, err := insp.QueueInfo(ctx, "q")
	if err != nil || qi.Pending != 1 {
		t.Fatalf("queue after three deliveries: %+v, %v", qi, err)
	}
}

// TestForwardDropsJunk: a notification that does not decode, or names no
// home, leaves its list without reaching any home.
func TestForwardDropsJunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	env := &home.Env{RDB: rdb, Prefix: prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	list := keys.For(prefix, "q", 0).Notify()
	if err := rdb.RPush(ctx, list, "junk", "\x95\xa4x99:y\xa1i\xa1s\xa0\xa0").Err(); err != nil {
		t.Fatal(err)
	}
	n, due, err := env.Forward(ctx, []string{list})
	if err != nil || n != 2 || len(due) != 0 {
		t.Fatalf("Forward: %d read, due %v, %v", n, due, err)
	}
	if l := rdb.LLen(ctx, list).Val(); l != 0 {
		t.Fatalf("list keeps %d entries", l)
	}
}

// TestForwardIsolatesScriptErrors: notifications of one home are applied
// in one call; when the script stops at one of them (its workflow's hash
// is damaged), the others are applied one by one and leave their list,
// and the one that fails stays there for the next forward.
func TestForwardIsolatesScriptErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := redistest.Prefix(t)
	env := &home.Env{RDB: rdb, Prefix: prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	qcfg := queue.Config{Prefix: prefix}
	client, err := queue.NewClient(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	insp, err := queue.NewInspector(rdb, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	// two workflows at one home (16 homes: a few tries), and one elsewhere
	byHome := map[int]string{}
	var good, bad string
	made := 0
	for good == "" || len(byHome) < 2 {
		made++
		wf := queue.NewWorkflow()
		wf.Add("r", queue.NewRawTask("r", nil, queue.In("q")))
		wf.Add("c", queue.NewRawTask("c", nil, queue.In("q")), queue.After("r"))
		id, err := client.EnqueueWorkflow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := byHome[keys.HomeOf(id)]; ok && good == "" {
			good, bad = other, id
		}
		if _, ok := byHome[keys.HomeOf(id)]; !ok {
			byHome[keys.HomeOf(id)] = id
		}
	}
	home := keys.HomeOf(good)
	// and one at another home, whose call is not held back either
	var elsewhere string
	for h, id := range byHome {
		if h != home {
			elsewhere = id
		}
	}
	note := func(id string) string {
		b, err := msgpack.Marshal([]any{wire.FlowRef{Kind: 'w', Home: keys.HomeOf(id), ID: keys.ShortID(id), Node: "r"}.String(), "task-of-r", "s", "", ""})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// r's children list, damaged, stops the script at bad's success
	if err := rdb.HSet(ctx, keys.Home(prefix, home).Workflow(bad), "c:r", "\x91\x01").Err(); err != nil {
		t.Fatal(err)
	}
	list := keys.For(prefix, "q", 0).Notify()
	if err := rdb.RPush(ctx, list, note(bad), note(good), note(elsewhere)).Err(); err != nil {
		t.Fatal(err)
	}
	for try := range 2 {
		_, _, err := env.Forward(ctx, []string{list})
		if err == nil || !strings.Contains(err.Error(), "user_script") {
			t.Fatalf("forward %d: %v, want the script's error", try, err)
		}
		for _, id := range []string{good, elsewhere} {
			wi, err := insp.GetWorkflow(ctx, id)
			if err != nil || wi.Node("r").State != queue.StateSucceeded || wi.Node("c").State != queue.StateEnqueued {
				t.Fatalf("forward %d: workflow %s: %+v, %v", try, id, wi, err)
			}
		}
		if vs := rdb.LRange(ctx, list, 0, -1).Val(); len(vs) != 1 || vs[0] != note(bad) {
			t.Fatalf("forward %d: the list holds %q, want the failing notification alone", try, vs)
		}
	}
	if qi, err := insp.QueueInfo(ctx, "q"); err != nil || qi.Pending != int64(made+2) {
		t.Fatalf("queue: %+v, %v; want the %d roots and the two good children pending", qi, err, made)
	}
}

func redisZ(member string) redis.Z { return redis.Z{Score: 0, Member: member} }

// tripHook counts the round trips a client makes, commands and
// pipelines, but a new connection's handshake (HELLO, CLIENT SETINFO).
type tripHook struct{ n int }

func (h *tripHook) count(cmd redis.Cmder) {
	if name := cmd.Name(); name != "hello" && name != "client" {
		h.n++
	}
}

func (h *tripHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *tripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *tripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds[0]); return next(ctx, cmds) }
}

// TestNothingToDoCostsNothing: Deliver of no homes, DeliverEntries of no
// entries and Forward of no lists make no round trip; Forward of empty
// lists makes one, the read.
func TestNothingToDoCostsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	prefix := redistest.Prefix(t)
	hook := &tripHook{}
	rdb.AddHook(hook)
	env := &home.Env{RDB: rdb, Prefix: prefix, ShardSize: 1000, FeedSize: 1000, IDTTL: time.Hour}
	if n, err := env.Deliver(ctx, nil); n != 0 || err != nil {
		t.Fatalf("Deliver(nil) = %d, %v", n, err)
	}
	if err := env.DeliverEntries(ctx, 3, nil); err != nil {
		t.Fatalf("DeliverEntries(nil) = %v", err)
	}
	if n, due, err := env.Forward(ctx, nil); n != 0 || due != nil || err != nil {
		t.Fatalf("Forward(nil) = %d, %v, %v", n, due, err)
	}
	if hook.n != 0 {
		t.Fatalf("%d round trips for nothing to do, want 0", hook.n)
	}
	lists := []string{keys.For(prefix, "q", 0).Notify(), keys.For(prefix, "q", 1).Notify()}
	if n, due, err := env.Forward(ctx, lists); n != 0 || due != nil || err != nil {
		t.Fatalf("Forward of empty lists = %d, %v, %v", n, due, err)
	}
	if hook.n != 1 {
		t.Fatalf("%d round trips to forward empty lists, want 1", hook.n)
	}
}
