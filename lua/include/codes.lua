-- The codes scripts return, and the values of ARGV that are codes, by
-- name. internal/codes/codes.go has the same names in Go (ENQ_DUPLICATE_ID
-- is codes.EnqDuplicateID); a test keeps the two files in step. A reply
-- that is yes or no is 1 or 0 and has no name.

-- no value: no feed rank, no next due time, no quota (not limited), no
-- retry (the task is dead)
local NONE = -1

-- enqueue.lua and enqueue_capped.lua: one per task; enqueue_one.lua:
-- ENQ_GUESSED, ENQ_CLOSED or the tail shard (see there)
local ENQ_PENDING = 0
local ENQ_SCHEDULED = 1
local ENQ_DUPLICATE_ID = -1
local ENQ_DUPLICATE_UNIQUE = -2
local ENQ_QUEUE_FULL = -3
local ENQ_KEY_FULL = -4
local ENQ_CLOSED = -5
local ENQ_GUESSED = -6

-- workflow_add, workflow_cancel (of the workflow, a batch among
-- them, or of the parent a new nested batch names; FLOW_CLOSED is a
-- cancelled workflow, or with a detail a batch's closed gate)
local FLOW_CREATED = 1
local FLOW_ID_TAKEN = -1
local FLOW_NOT_FOUND = -2
local FLOW_FINISHED = -3
local FLOW_CLOSED = -4
local FLOW_NAME_TAKEN = -5
local FLOW_UNKNOWN_PARENT = -6
local FLOW_TOO_BIG = -7
local FLOW_NOT_WAITING = -8
local FLOW_CYCLE = -9

-- pop and claim: why nothing was leased
local POP_OK = 0
local POP_PAUSED = 1
local POP_FULL = 2
local POP_RATE = 3
local POP_PARKED = 4

-- fail: one per task
local FAIL_STALE = 0
local FAIL_RETRY = 1
local FAIL_DEAD = 2
local FAIL_SNOOZED = 3

-- feed_read
local MARKER_NOT_FOUND = -1
