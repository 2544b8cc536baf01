package redistest

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProcessCPU is this process's CPU time so far (user and system).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPU is the Redis server's CPU seconds so far (user and system).
func CPU(b testing.TB, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	return infoField(info, "used_cpu_user") + infoField(info, "used_cpu_sys")
}

// CommandUsec is the time Redis spent in cmd since its stats were reset,
// in microseconds (INFO commandstats).
func CommandUsec(b testing.TB, rdb *redis.Client, cmd string) float64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if stats, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
			return infoField(strings.ReplaceAll(stats, ",", "\r\n"), "usec")
		}
	}
	return 0
}

// infoField reads "name:value" or "name=value" from INFO text.
func infoField(info, name string) float64 {
	for _, line := range strings.Split(info, "\r\n") {
		for _, sep := range []string{":", "="} {
			if v, ok := strings.CutPrefix(line, name+sep); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return f
			}
		}
	}
	return 0
}
