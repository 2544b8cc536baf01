// Package redistest starts real redis-server processes for tests. It is a
// thin testing.TB wrapper over package redisproc, which programs without a
// testing.TB (the demo, runnable examples) use directly.
//
// Every server runs on a free loopback port (bound to 127.0.0.1 only) with
// its own temporary directory, and is killed when the test finishes, even if
// the test fails. On Linux the server also gets a parent-death signal, so a
// crashed test binary does not leave servers behind.
//
// Typical use:
//
//	srv := redistest.Start(t)             // persistence off
//	rdb := srv.Client(t)                  // closed in t.Cleanup
//	key := redistest.Prefix(t) + ":jobs"  // unique per test
//
// Failure injection: [Server.Kill] (crash), [Server.Stop] (graceful
// shutdown), [Server.Restart] (same port, same directory, so AOF data from
// [WithAOF] survives), [Server.Pause] and [Server.Resume] (a hung Redis).
//
// [StartCluster] starts a Redis Cluster of n masters, with slots assigned and
// nodes joined from Go (redis-cli is not needed); [StartClusterWithReplicas]
// gives each master a replica, for failover tests. [StartSentinel] starts a
// master, a replica and three Sentinels.
//
// If redis-server is not in PATH, [Start] fails the test with a one-line hint
// on how to install it. Other failures report redisproc's error. The package
// targets Linux and other Unix systems.
package redistest
