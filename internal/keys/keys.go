// Package keys builds every Redis key shardq uses, in one place. All keys of
// one queue partition share the hash tag {<prefix>:<queue>:<partition>}, so
// every script touches one cluster slot.
package keys

import "strconv"

// Partition is the key space of one queue partition: its tag T and every
// key derived from it.
type Partition struct {
	T string // "{prefix:queue:n}"
}

// For returns the keys of partition n of queue under prefix.
func For(prefix, queue string, n int) Partition {
	return Partition{T: "{" + prefix + ":" + queue + ":" + strconv.Itoa(n) + "}"}
}

// First holds the pending list's first shard number.
func (p Partition) First() string { return p.T + ":first" }

// Last holds the pending list's last shard number.
func (p Partition) Last() string { return p.T + ":last" }

// Guard is a key that never exists, declared by every script that writes
// the pending list's shards (which it reaches by number, undeclared): on a
// slot that is migrating, Redis refuses a script as soon as one of its
// declared keys is missing, so such a script never runs while the slot's
// keys are moving. Redis would otherwise stop it at the first shard that
// has already moved, after the writes it made before: a half run whose
// retry repeats them (docs/ARCHITECTURE.md, "Redis Cluster").
func (p Partition) Guard() string { return p.T + ":guard" }

// ShardPrefix is the pending list's shard key prefix: shard n is ShardPrefix()+n.
func (p Partition) ShardPrefix() string { return p.T + ":s:" }

// Base is the pending list's base, as lua.ShardedList names it.
func (p Partition) Base() string { return p.T }

// Msg is the hash id -> message of tasks that are not pending.
func (p Partition) Msg() string { return p.T + ":msg" }

// State is the hash id -> mutable record of tasks that are not pending.
func (p Partition) State() string { return p.T + ":state" }

// Active is the zset id -> lease deadline of running tasks.
func (p Partition) Active() string { return p.T + ":active" }

// Inflight is where a worker's blocking pop lands before its claim.
func (p Partition) Inflight(worker string) string { return p.T + ":inflight:" + worker }

// Scheduled is the zset id -> due time of delayed tasks.
func (p Partition) Scheduled() string { return p.T + ":scheduled" }

// Retry is the zset id -> due time of tasks waiting to retry.
func (p Partition) Retry() string { return p.T + ":retry" }

// Feed is the ranked feed of recently enqueued task IDs.
func (p Partition) Feed() string { return p.T + ":feed" }

// FeedMsg is the hash id -> message of the tasks in Feed that keep a copy:
// scheduled tasks, tasks with a group, and a task pushed into an
// empty shard. Other pending tasks are found through FeedShards.
func (p Partition) FeedMsg() string { return p.T + ":feed:msg" }

// FeedShards is the zset shard number -> first feed rank pushed there by
// enqueue: where readers find a pending task's message when Feed keeps no
// copy (lua/engine/include/pendingref.lua builds the same name from T).
func (p Partition) FeedShards() string { return p.T + ":feed:shards" }

// Done is the ranked feed of finished tasks.
func (p Partition) Done() string { return p.T + ":done" }

// Dead is the ranked feed of tasks that will not run again.
func (p Partition) Dead() string { return p.T + ":dead" }

// RankKey returns the rank counter of a feed key (as lua.Feed names it).
func RankKey(feed string) string { return feed + ":rank" }

// Expire is the zset id -> time when a done task's retention ends.
func (p Partition) Expire() string { return p.T + ":expire" }

// Stats is the per-minute counter of kind ("done", "failed") for minute
// (unix minutes); stats.lua writes it.
func (p Partition) Stats(kind string, minute int64) string {
	return p.T + ":stats:" + kind + ":" + strconv.FormatInt(minute, 10)
}

// StatsTotal is the counter of kind ("done", "failed") since the queue
// began; stats.lua writes it with the per-minute ones.
func (p Partition) StatsTotal(kind string) string { return p.T + ":stats:" + kind + ":total" }

// Progress is the hash id -> a running task's last reported progress
// (wire.Progress), kept while the task is.
func (p Partition) Progress() string { return p.T + ":progress" }

// Result is the hash id -> the result a task's handler wrote, kept with
// the task for its retention.
func (p Partition) Result() string { return p.T + ":result" }

// Steps is the hash id -> the steps a task's handler finished
// (wire.Steps, worker.Step), kept with the task until it is gone.
func (p Partition) Steps() string { return p.T + ":steps" }

// Tomb is the set of IDs of pending tasks deleted (Inspector.DeleteTask)
// that the dequeue has not reached yet: it drops them as it does.
func (p Partition) Tomb() string { return p.T + ":tomb" }

// RateSamples is the list of "ms:count" samples of the feed's rank
// counter that readers of the arrival rate keep (lua/engine/rate_sample.lua).
func (p Partition) RateSamples() string { return p.T + ":rate" }

// Paused exists while the queue is paused.
func (p Partition) Paused() string { return p.T + ":paused" }

// Queues is the registry of queue name -> partition count.
func Queues(prefix string) string { return prefix + ":queues" }

// Layout is the hash of queue name -> the partition layout an operator set
// (Inspector.SetPartitions), "<route>/<serve>" (internal/layout).
func Layout(prefix string) string { return prefix + ":layout" }

// Protocol is the string "<major>.<minor>": the version of the wire
// protocol the prefix's data follows (internal/protocol, docs/protocol.md).
func Protocol(prefix string) string { return prefix + ":protocol" }

// Workers is the zset of live worker processes by heartbeat.
func Workers(prefix string) string { return prefix + ":workers" }

// WorkerStatus is the hash of worker ID -> wire.WorkerStatus, written with
// each heartbeat and deleted with the worker's entry in Workers.
func WorkerStatus(prefix string) string { return prefix + ":workers:status" }

// Unique is the uniqueness lock of a uniqueness ID (its value is the task ID).
func (p Partition) Unique(key string) string { return p.T + ":unique:" + key }

// IDClaims is the pattern of the hashes that hold the claims of
// caller-chosen task IDs, per time bucket and shard
// (lua/engine/include/idclaim.lua).
func (p Partition) IDClaims() string { return p.T + ":ids:*" }

// Semaphore returns the sorted set of a fleet-wide semaphore of the
// worker's Semaphore middleware: holder -> expiry.
func Semaphore(prefix, name string) string { return prefix + ":sem:" + name }

// Cron is the hash of periodic schedules: name -> what queue.ScheduleInfo shows.
func Cron(prefix string) string { return prefix + ":cron" }

// Limits is the hash of the partition's limits: concurrency, rate, per
// (ms), keyconc. Scripts read it at every dequeue, so changes apply at once.
func (p Partition) Limits() string { return p.T + ":limits" }

// RateLog is the zset of recent task starts (member -> start ms) that the
// rate limit counts.
func (p Partition) RateLog() string { return p.T + ":ratelog" }

// KeyActive is the hash group -> tasks of that key running.
func (p Partition) KeyActive() string { return p.T + ":keyactive" }

// KeyWaiting is the hash group -> tasks parked for that key.
func (p Partition) KeyWaiting() string { return p.T + ":keywait" }

// Parked is the list of tasks of key waiting for their key's limit.
func (p Partition) Parked(key string) string { return p.T + ":k:" + key }

// ParkedCount counts the tasks parked for their key's limit, all keys together.
func (p Partition) ParkedCount() string { return p.T + ":parked" }

// KeyDepth is the hash group -> its tasks enqueued and never
// started, kept while the queue has a GroupMaxDepth.
func (p Partition) KeyDepth() string { return p.T + ":kdepth" }

// Cancel is the zset id -> when a cancel was asked (ms) of active tasks
// whose handlers an operator asked to cancel; the worker's heartbeat reads it.
func (p Partition) Cancel() string { return p.T + ":cancel" }

// FairRing is the ring of groups whose tasks may start, in turn
// order (lua/engine/include/fair_layout.lua names the fair queue's other keys).
func (p Partition) FairRing() string { return p.T + ":fr" }

// FairDue is the zset key -> when its GroupRate lets it start again.
func (p Partition) FairDue() string { return p.T + ":fd" }

// FairKeys is the hash key -> "first last state" of the keys with tasks
// waiting in their own lists.
func (p Partition) FairKeys() string { return p.T + ":fk" }

// FairBacklog is the zset key -> its tasks waiting.
func (p Partition) FairBacklog() string { return p.T + ":fz" }

// FairCount counts the tasks waiting in every key's list.
func (p Partition) FairCount() string { return p.T + ":fn" }

// FairHeld counts the tasks waiting in the lists of keys that may not
// start now: at their limits, or paused.
func (p Partition) FairHeld() string { return p.T + ":fh" }

// FairWeights is the hash key -> weight an operator set.
func (p Partition) FairWeights() string { return p.T + ":fw" }

// FairPaused is the set of keys an operator paused.
func (p Partition) FairPaused() string { return p.T + ":fp" }
