package main

import (
	"testing"
)

func TestParseRatios(t *testing.T) {
	out := `
shardq and its peers, 1 round(s), interleaved

| figure | shardq | asynq | gocraft/work | shardq ÷ asynq | shardq ÷ gocraft/work |
| --- | --- | --- | --- | --- | --- |
| Redis limit: EVALSHA unpipelined, calls/s | 29328 | | | | |
| Enqueue, 1 producer: tasks/s | 17672 (15849–33847) | 17988 | 18624 | 0.98× | 0.95× |
| Process, concurrency 16: tasks/s | 227272 | no figure: timeout | 38588 | – | 5.89× |
| Latency run: late beats | 4.00 | 0.00 | 8.00 | – | 0.50× |

of Redis's limit: shardq single Enqueue 60%;
`
	keys, vals := parseRatios(out)
	want := []struct {
		k ratioKey
		v float64
	}{
		{ratioKey{"Enqueue, 1 producer: tasks/s", "asynq"}, 17672.0 / 17988},
		{ratioKey{"Enqueue, 1 producer: tasks/s", "gocraft/work"}, 17672.0 / 18624},
		{ratioKey{"Process, concurrency 16: tasks/s", "gocraft/work"}, 227272.0 / 38588},
		{ratioKey{"Latency run: late beats", "gocraft/work"}, 0.5},
	}
	if len(keys) != len(want) {
		t.Fatalf("keys = %v, want %d", keys, len(want))
	}
	for i, w := range want {
		if keys[i] != w.k || vals[w.k] != w.v {
			t.Errorf("key %d = %v: %v, want %v: %v", i, keys[i], vals[keys[i]], w.k, w.v)
		}
	}
}

func TestParseWorkflow(t *testing.T) {
	out := `goos: linux
BenchmarkWorkflow/shape=fan-in/nodes=1000-2         	       1	2791830339 ns/op	        34.55 node-redis-cpu-us/node	        18.48 plain-redis-cpu-us/task	         1.870 cpu-x	       269.8 plain-B/task
BenchmarkWorkflow/shape=layers/nodes=10000         	       1	2791830339 ns/op	        50.77 node-redis-cpu-us/node	        18.48 plain-redis-cpu-us/task
PASS
`
	names, figs := parseWorkflow(out)
	if len(names) != 2 || names[0] != "BenchmarkWorkflow/shape=fan-in/nodes=1000" || names[1] != "BenchmarkWorkflow/shape=layers/nodes=10000" {
		t.Fatalf("names = %q", names)
	}
	if f := figs[names[0]]; f.node != 34.55 || f.plain != 18.48 {
		t.Errorf("%s = %+v", names[0], f)
	}
}
