// Package lua holds every Lua script shardq runs (the engine's under
// engine/, read only by shardq's own packages), and the Redis primitives
// built from them, each usable on its own:
//
//   - ShardedList: a list stored as a chain of bounded lists, with batch
//     push and pop at either end and a blocking pop in one-second slices
//     that a helper script wakes with a dummy item when the shard it waits
//     on is stale (Redis in Action 11.4);
//   - FairSemaphore: a fair counting semaphore whose holders expire (Redis
//     in Action 11.2.3);
//   - RankedFeed: a ranked feed that readers page by marker without ever
//     missing an entry (after Zaqar's Redis driver);
//   - SafeCounter: a safe counter that is restored from its start point,
//     never silently restarted at zero.
//
// Each script opens with its contract (KEYS, ARGV, Returns) and may pull
// shared functions from include/ with a "--@include name" line. Scripts
// run by SHA; a flushed script cache is recovered transparently.
//
// Applications rarely need this package: queue and worker use it for them.
// worker.Semaphore is the fair semaphore as handler middleware.
//
// On Redis Cluster, every key of one call must share a hash tag: give each
// primitive a key or base such as "{jobs}".
package lua
