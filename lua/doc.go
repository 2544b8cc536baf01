// Package lua holds every Lua script shardq runs, embedded from .lua files,
// and the Redis primitives built from them, each usable on its own:
//
//   - ShardedList: a list stored as a chain of bounded lists, with batch
//     push and pop at either end and a blocking pop in one-second slices
//     that a helper script wakes with a dummy item when the shard it waits
//     on is stale (Redis in Action 11.4);
//   - Semaphore: a fair counting semaphore whose holders expire (Redis in
//     Action 11.2.3);
//   - Feed: a ranked feed that readers page by marker without ever missing
//     an entry (after Zaqar's Redis driver);
//   - Counter: a safe counter that is restored from its start point, never
//     silently restarted at zero.
//
// Each script opens with its contract (KEYS, ARGV, Returns) and may pull
// shared functions from include/ with a "--@include name" line; Resolve
// inlines them once, failing on a missing include or a cycle. Scripts run
// by SHA (Script.Run, Pipelined); a flushed script cache is recovered
// transparently, in pipelines too.
//
// On Redis Cluster, every key of one call must share a hash tag: give each
// primitive a key or base such as "{jobs}".
package lua
