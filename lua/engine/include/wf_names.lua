-- The names of a workflow's states and fields, and the constants the
-- helpers share. Included inside wf_run_lib, so a call that touches no
-- workflow builds none of these tables; the edges' and effects' names
-- are in include/wf_effect.lua, made with the helpers that use them.
local byte, find, sub = string.byte, string.find, string.sub
-- WF_STATE: a node's state, the first letter of its s:<name> field.
local WF_STATE = {
  waiting = 'w', -- for parents
  enqueued = 'p', -- pending, running or retrying
  succeeded = 's',
  dead = 'd',
  failed = 'f', -- a parent did not succeed, over a fail edge
  skipped = 'k', -- over a skip edge
  cancelled = 'x',
}
-- WF_FIELD: the prefix of each field of W a node has, before its name.
local WF_FIELD = {
  route = 'm:', -- {task ID, queue, type, partition, ...} in cmsgpack
  state = 's:', -- its state, and its parents' effects while it waits
  children = 'c:', -- its children, each name after its edge's letter
  task = 'e:', -- its task until it is released
  result = 'r:',
  error = 'x:',
}
-- the states that count as open (the workflow is not finished), and that
-- keep their parents' effects (waits)
local OPEN = {[WF_STATE.waiting] = true, [WF_STATE.enqueued] = true}
local WAITS = {[WF_STATE.waiting] = true, [WF_STATE.failed] = true, [WF_STATE.skipped] = true}
-- The entries of the nodes a run moves the common ways, an enqueued
-- node acked (wf_acked) and a waiting one released by its only parent
-- (wf_spread): shared, since after the move a run only reads them (only
-- waiting nodes change again), and their states go straight into r.kv:
-- neither allocates a table per node.
local SUCCEEDED = {WF_STATE.succeeded, 0, 0, 0, false, nil, true}
local RELEASED = {WF_STATE.enqueued, 0, 0, 0, false, nil, true}

-- A script meets the same few counts again and again: NUM and STR keep
-- their conversions, each a strtod or an snprintf (a number passed to
-- redis.call is formatted with "%.17g").
local NUM, STR = {}, {}
