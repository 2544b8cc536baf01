package coalesce

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestLine: calls go out alone up to the depth and while their place has
// none in flight; past it they wait, and the returning call takes them
// all as one shared call; a waiter that leaves before it was taken is
// dropped, one that leaves after ends the shared call once every caller
// of it has left.
func TestLine(t *testing.T) {
	t.Parallel()
	var all atomic.Int64
	var l, other Line[int, string]
	ctx := context.Background()
	one, two := 1, 2
	if l.Join(ctx, &one, 1, &all) != nil {
		t.Fatal("the first call of a place waits")
	}
	if other.Join(ctx, &two, 1, &all) != nil {
		t.Fatal("the first call of another place waits, past the depth")
	}
	w1 := l.Join(ctx, &one, 1, &all)
	w2 := l.Join(ctx, &two, 1, &all)
	if w1 == nil || w2 == nil || l.Waiting() != 2 || all.Load() != 2 {
		t.Fatalf("past the depth with a call in flight: waiters %v %v, %d waiting, %d in flight", w1, w2, l.Waiting(), all.Load())
	}
	two = 20 // the line holds a copy
	ws, call := l.TakeOrIdle(&all)
	if len(ws) != 2 || ws[0].Item != 1 || ws[1].Item != 2 || call == nil || l.Waiting() != 0 || all.Load() != 2 {
		t.Fatalf("TakeOrIdle: %d waiters, call %v, %d in flight", len(ws), call, all.Load())
	}
	ws[0].Tell("a", nil)
	ws[1].Tell("", errors.New("refused"))
	if out, told, err := l.Await(ctx, w1); out != "a" || err != nil || !told {
		t.Fatalf("Await: %q %v %v", out, err, told)
	}
	if _, told, err := l.Await(ctx, w2); err == nil || !told {
		t.Fatalf("Await of a refused item: %v %v", err, told)
	}
	call.End()
	if ws, call := l.TakeOrIdle(&all); ws != nil || call != nil || all.Load() != 1 {
		t.Fatalf("an empty line's TakeOrIdle: %v %v, %d in flight", ws, call, all.Load())
	}

	// leaving
	if l.Join(ctx, &one, 1, &all) != nil {
		t.Fatal("a call of an idle place waits")
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	dropped := l.Join(ctx, &one, 1, &all)
	if _, told, err := l.Await(gone, dropped); !errors.Is(err, context.Canceled) || told || l.Waiting() != 0 {
		t.Fatalf("a waiter that left before it was taken: %v %v, %d waiting", err, told, l.Waiting())
	}
	a, b := l.Join(ctx, &one, 1, &all), l.Join(ctx, &two, 1, &all)
	_, call = l.TakeOrIdle(&all)
	for _, w := range []*Waiter[int, string]{a, b} {
		if call.Ctx.Err() != nil {
			t.Fatal("the shared call ended while a caller waits")
		}
		if _, told, err := l.Await(gone, w); !errors.Is(err, context.Canceled) || told {
			t.Fatalf("a waiter that left after it was taken: %v %v", err, told)
		}
	}
	if call.Ctx.Err() == nil {
		t.Fatal("the shared call goes on after every caller left")
	}
}
