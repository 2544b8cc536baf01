// Package tripcount counts the Redis round trips of the worker's
// scripts, for the tests that hold the engine to one round trip per
// batch.
package tripcount

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// Hook records, for every round trip, the names of the scripts it ran
// and how many script calls it made. A pop or claim that carries acks
// counts as one call running both "pop" (or "claim") and "ack".
type Hook struct {
	names map[string]string // SHA -> script name
	mu    sync.Mutex
	trips [][]string
	calls []int
}

// New returns a hook that records the round trips of a client it is added to.
func New() *Hook {
	h := &Hook{names: map[string]string{}}
	for _, s := range []*rcall.Script{script.Pop, script.Claim, script.Ack, script.Fail, script.Requeue, script.Forward} {
		h.names[s.Hash()] = s.Name()
	}
	return h
}

func (h *Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds)
		return next(ctx, cmds)
	}
}

func (h *Hook) record(cmds []redis.Cmder) {
	var trip []string
	calls := 0
	for _, c := range cmds {
		if strings.ToLower(c.Name()) != "evalsha" {
			continue
		}
		args := c.Args()
		sha, _ := args[1].(string)
		name := h.names[sha]
		if name == "" {
			continue
		}
		calls++
		trip = append(trip, name)
		if numKeys, _ := args[2].(int); (name == "pop" || name == "claim") && len(args)-3-numKeys > 7 {
			trip = append(trip, "ack") // ARGV[8..]: the acks it carries
		}
	}
	if len(trip) == 0 {
		return // a handshake, a blocking move, a heartbeat...
	}
	h.mu.Lock()
	h.trips = append(h.trips, trip)
	h.calls = append(h.calls, calls)
	h.mu.Unlock()
}

// Running returns how many recorded round trips ran the script named.
func (h *Hook) Running(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.trips {
		for _, s := range t {
			if s == name {
				n++
				break
			}
		}
	}
	return n
}

// Count returns the recorded round trips and how many of them ran both an
// ack and a pop.
func (h *Hook) Count() (trips, carried int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.trips {
		ack, pop := false, false
		for _, n := range t {
			ack = ack || n == "ack"
			pop = pop || n == "pop"
		}
		if ack && pop {
			carried++
		}
	}
	return len(h.trips), carried
}

// Calls returns the script calls of each recorded round trip.
func (h *Hook) Calls() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.calls...)
}

// Trips returns the names of the scripts each recorded round trip ran.
func (h *Hook) Trips() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.trips...)
}
