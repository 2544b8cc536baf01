// Package codes names the codes shardq's Lua scripts return, and the
// values of their arguments that are codes. lua/include/codes.lua has the
// same names, in Lua's spelling (EnqDuplicateID is ENQ_DUPLICATE_ID); a
// test keeps the two files in step. A reply that is yes or no is 1 or 0
// and has no name.
package codes

// None is no value: no feed rank, no next due time, no quota (not
// limited), no retry (the task is dead).
const None = -1

// Enqueue codes: one per task of enqueue.lua and enqueue_capped.lua.
// enqueue_one.lua answers EnqGuessed, EnqClosed or the tail shard.
const (
	EnqPending         = 0
	EnqScheduled       = 1
	EnqDuplicateID     = -1
	EnqDuplicateUnique = -2
	EnqQueueFull       = -3
	EnqKeyFull         = -4
	EnqClosed          = -5
	EnqGuessed         = -6
)

// Flow codes of workflow_add and workflow_cancel: about the
// workflow (a batch is one), or about the parent a new nested batch
// names. FlowClosed is a cancelled workflow, or with a detail a batch's
// closed gate.
const (
	FlowCreated       = 1
	FlowIDTaken       = -1
	FlowNotFound      = -2
	FlowFinished      = -3
	FlowClosed        = -4
	FlowNameTaken     = -5
	FlowUnknownParent = -6
	FlowTooBig        = -7
	FlowNotWaiting    = -8
	FlowCycle         = -9
)

// Pop codes: why pop or claim leased nothing.
const (
	PopOK     = 0
	PopPaused = 1
	PopFull   = 2 // at the concurrency limit
	PopRate   = 3 // at the rate limit; the reply's aux is the ms to wait
	PopParked = 4 // nothing leased, but tasks were parked for their key
)

// Fail codes: one per task of fail.lua.
const (
	FailStale   = 0
	FailRetry   = 1
	FailDead    = 2
	FailSnoozed = 3
)

// MarkerNotFound is feed_read's answer when the marker left the feed.
const MarkerNotFound = -1
