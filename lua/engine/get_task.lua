#!lua flags=no-writes,allow-oom
--[[ get_task: everything one queue partition T holds about a task.
  KEYS[1] T:msg  KEYS[2] T:state  KEYS[3] T:feed:msg  KEYS[4] T:feed
  KEYS[5] T:progress  KEYS[6] T:result  KEYS[7] T:cancel  KEYS[8] T:steps
  ARGV[1] task ID
  Returns: {message or nil, record or "", feed rank or NONE, progress or nil,
  result or nil, 1 when an operator asked to cancel it, else 0, its
  finished steps (wire.Steps) or nil}; the message comes
  from T:msg when the task has a record, else from the recent feed's copy or,
  for a plain task still pending, its shard (include/pendingref.lua). nil, not "", says there is none: an empty element pushed by a foreign
  client is a message too, dead as malformed, and must be found ]]
--@include codes
--@include pendingref
local id = ARGV[1]
local msg = redis.call('HGET', KEYS[1], id) or redis.call('HGET', KEYS[3], id)
local rec = redis.call('HGET', KEYS[2], id) or ''
local rank = redis.call('ZSCORE', KEYS[4], id)
if not msg and rank then
  -- a plain task still pending: its message is only in its shard
  local T = string.sub(KEYS[1], 1, -5) -- T:msg less ':msg'
  msg = pending_lookup(T, {id}, {rank})[id] or false
end
return {msg, rec, rank and tonumber(rank) or NONE,
  redis.call('HGET', KEYS[5], id), redis.call('HGET', KEYS[6], id),
  redis.call('ZSCORE', KEYS[7], id) and 1 or 0, redis.call('HGET', KEYS[8], id)}
