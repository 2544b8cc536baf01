package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLimits is what Redis itself does on this machine, measured in the
// same run, so every figure also reads as a ratio of it.
type redisLimits struct {
	evalsha          float64   // unpipelined trivial EVALSHA, calls/s: the median of probes
	evalshaRTT       float64   // its round trip, µs
	probes           []float64 // every probe of evalsha, interleaved with the parts
	evalshaPipelined float64   // pipelined trivial EVALSHA, calls/s
	rpushPipelined   float64   // pipelined RPUSH of one payload, ops/s
	lpopPipelined    float64   // pipelined LPOP, ops/s
	listBytes        float64   // used_memory per payload in a plain list, bytes
}

var trivialScript = redis.NewScript("return 1")

func (b *bench) measureLimits(ctx context.Context) error {
	if err := trivialScript.Load(ctx, b.rdb).Err(); err != nil {
		return err
	}
	const calls = 20_000
	// The key is the run's own, so runs sharing a Redis never touch each
	// other's keys; cleanup finds it by the prefix.
	if err := b.probeLimit(ctx, calls); err != nil {
		return err
	}
	probe := []string{b.cfg.Prefix + ":limit:x"}

	rate, err := pipelined(ctx, b.rdb, 200_000, func(p redis.Pipeliner) {
		trivialScript.EvalSha(ctx, p, probe)
	})
	if err != nil {
		return err
	}
	b.limits.evalshaPipelined = rate
	b.add(figure{Name: "redis: EVALSHA pipelined (500)", Value: rate, Unit: "calls/s"})

	item := strings.Repeat("x", b.f.payload)
	key := b.cfg.Prefix + ":limit:list"
	before, err := usedMemory(ctx, b.rdb)
	if err != nil {
		return err
	}
	if b.limits.rpushPipelined, err = pipelined(ctx, b.rdb, 200_000, func(p redis.Pipeliner) { p.RPush(ctx, key, item) }); err != nil {
		return err
	}
	after, err := usedMemory(ctx, b.rdb)
	if err != nil {
		return err
	}
	b.limits.listBytes = float64(after-before) / 200_000
	b.add(figure{Name: "redis: RPUSH pipelined (500)", Value: b.limits.rpushPipelined, Unit: "ops/s"})
	if b.limits.lpopPipelined, err = pipelined(ctx, b.rdb, 200_000, func(p redis.Pipeliner) { p.LPop(ctx, key) }); err != nil {
		return err
	}
	b.add(figure{Name: "redis: LPOP pipelined (500)", Value: b.limits.lpopPipelined, Unit: "ops/s"})
	b.add(figure{Name: "redis: memory per list item", Value: b.limits.listBytes, Unit: "bytes"})
	return b.rdb.Del(ctx, key).Err()
}

// probeCalls is the size of the probes between parts.
const probeCalls = 5_000

// probeLimit measures the unpipelined EVALSHA rate once more. The run
// probes before every part and after the last, and every ratio to it
// divides by the median of those probes: one probe alone varies threefold
// on a shared machine.
func (b *bench) probeLimit(ctx context.Context, calls int) error {
	probe := []string{b.cfg.Prefix + ":limit:x"}
	start := time.Now()
	for range calls {
		if err := trivialScript.EvalSha(ctx, b.rdb, probe).Err(); err != nil {
			return err
		}
	}
	rate := float64(calls) / time.Since(start).Seconds()
	b.limits.probes = append(b.limits.probes, rate)
	b.limits.evalsha = median(b.limits.probes)
	b.limits.evalshaRTT = 1e6 / b.limits.evalsha
	b.progress("  limit probe %d: %.0f EVALSHA calls/s", len(b.limits.probes), rate)
	return nil
}

// limitFigures puts the probes' median, slowest and fastest first in the
// table.
func (b *bench) limitFigures() {
	p := b.limits.probes
	rest := b.figures
	b.figures = nil
	b.add(figure{Name: "redis: EVALSHA unpipelined", Value: median(p), Unit: "calls/s", LimitName: fmt.Sprintf("median of %d probes", len(p))})
	b.add(figure{Name: "redis: EVALSHA unpipelined, slowest probe", Value: slices.Min(p), Unit: "calls/s"})
	b.add(figure{Name: "redis: EVALSHA unpipelined, fastest probe", Value: slices.Max(p), Unit: "calls/s"})
	b.figures = append(b.figures, rest...)
}

// median returns the median of vs (the mean of the middle two when even).
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pipelined runs n commands in pipelines of 500 and returns commands/s.
func pipelined(ctx context.Context, rdb redis.UniversalClient, n int, cmd func(redis.Pipeliner)) (float64, error) {
	start := time.Now()
	for done := 0; done < n; done += 500 {
		p := rdb.Pipeline()
		for range 500 {
			cmd(p)
		}
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// usedMemory reads INFO memory's used_memory.
func usedMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	return infoInt(ctx, rdb, "memory", "used_memory")
}

// infoInt reads one numeric field of an INFO section.
func infoInt(ctx context.Context, rdb redis.UniversalClient, section, field string) (int64, error) {
	v, err := infoFloat(ctx, rdb, section, field)
	return int64(v), err
}

func infoFloat(ctx context.Context, rdb redis.UniversalClient, section, field string) (float64, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var f float64
			_, err := fmtSscan(v, &f)
			return f, err
		}
	}
	return 0, nil
}
