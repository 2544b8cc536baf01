// Package redisproc starts and manages real redis-server processes, for the
// shardq demo, runnable examples and (through package redistest) tests.
//
// Every server runs on a free loopback port (bound to 127.0.0.1 only) in its
// own directory: a fresh temporary one by default, which [Server.Close]
// removes, or one given with [WithDir]. Persistence is off unless [WithAOF]
// is given.
//
// Typical use:
//
//	srv, err := redisproc.Start()
//	if err != nil {
//		return err // redisproc.ErrNotInstalled if redis-server is not in PATH
//	}
//	defer srv.Close()
//	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
//
// Failure injection: [Server.Kill] (crash), [Server.Stop] (graceful
// shutdown), [Server.Restart] (same port, same directory, so AOF data from
// [WithAOF] survives), [Server.Pause] and [Server.Resume] (a hung Redis).
//
// [StartCluster] starts a Redis Cluster of n masters, with slots assigned and
// nodes joined from Go (redis-cli is not needed); [StartClusterWithReplicas]
// gives each master a replica, for failover ([Cluster.MasterOf],
// [Cluster.WaitHealthy], [Cluster.MigrateSlot]). [StartSentinel] starts a
// master, a replica and three Sentinels.
//
// # Process lifetime
//
// Each redis-server runs in its own process group, so Kill and Close also
// reach any child it forked (for example for an AOF rewrite). On Linux it
// also gets a parent-death signal (SIGKILL), so a crashed or interrupted
// program does not leave servers behind; their temporary directories do
// remain unless Close runs, so a program that handles SIGINT should Close
// its servers before exiting. The parent-death signal fires when the OS
// thread that started the server exits, which the Go runtime only does for
// a goroutine that exits while locked to its thread: do not call [Start],
// [StartCluster] or [Server.Restart] from a goroutine that uses
// runtime.LockOSThread without unlocking.
//
// The package targets Linux and other Unix systems.
package redisproc
