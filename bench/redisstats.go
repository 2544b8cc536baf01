package main

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// stats reads what the run measures from Redis itself: INFO's CPU,
// memory and per-command call counts.
type stats struct{ rdb *redis.Client }

// snapshot is Redis's CPU and call counts at one instant, with this
// process's own CPU.
type snapshot struct {
	redisCPU time.Duration
	selfCPU  time.Duration
	calls    int64
	at       time.Time
}

// snap reads Redis's figures, then this process's: a snapshot that opens
// a measured stretch, whose INFO call stays out of it.
func (s stats) snap(ctx context.Context) (snapshot, error) {
	sn, err := s.info(ctx)
	sn.selfCPU, sn.at = selfCPU(), time.Now()
	return sn, err
}

// snapEnd reads this process's figures, then Redis's: a snapshot that
// closes a measured stretch, whose INFO call stays out of it too (but for
// Redis's own time on it before it reads its CPU).
func (s stats) snapEnd(ctx context.Context) (snapshot, error) {
	self, at := selfCPU(), time.Now()
	sn, err := s.info(ctx)
	sn.selfCPU, sn.at = self, at
	return sn, err
}

// info reads Redis's CPU and call counts.
func (s stats) info(ctx context.Context) (snapshot, error) {
	info, err := s.rdb.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return snapshot{}, err
	}
	var sn snapshot
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			sn.redisCPU += time.Duration(f * float64(time.Second))
		case strings.HasPrefix(k, "cmdstat_") && k != "cmdstat_info":
			// calls=N,usec=...: every command, those a script runs included
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			sn.calls += n
		}
	}
	return sn, nil
}

// usedMemory reads INFO memory's used_memory.
func (s stats) usedMemory(ctx context.Context) (int64, error) {
	info, err := s.rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, nil
}

// selfCPU is this process's CPU time so far (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var probeScript = redis.NewScript("return 1")

// probeLimit is Redis's own limit here, measured now: unpipelined EVALSHA
// calls of a trivial script per second, from one client.
func (s stats) probeLimit(ctx context.Context, calls int) (float64, error) {
	if err := probeScript.Load(ctx, s.rdb).Err(); err != nil {
		return 0, err
	}
	start := time.Now()
	for range calls {
		if err := probeScript.EvalSha(ctx, s.rdb, nil).Err(); err != nil {
			return 0, err
		}
	}
	return float64(calls) / time.Since(start).Seconds(), nil
}
