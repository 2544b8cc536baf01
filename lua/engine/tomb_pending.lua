#!lua flags=allow-oom
--[[ tomb_pending: delete one pending task by ID. A pending task is an
  element somewhere in the sharded list, which has no index by ID, so it is
  not searched for: its ID goes into T:tomb, and the dequeue that reaches it
  drops it instead of leasing it (include/lease.lua, dequeue_reply). Its
  recent-feed copy goes now, and its uniqueness lock; a flow task's flow
  is told now that it is dead (include/home_deleted.lua).
  KEYS[1] T:tomb  KEYS[2] T:state  KEYS[3] T:active  KEYS[4] T:feed:msg
  ARGV[1] T  ARGV[2] task ID
  Returns: 1 marked for deletion, 0 not pending (running, finished,
  scheduled or retrying, already deleted, or not in the recent feed) ]]
--@include record
--@include msg_unique
--@include home_deleted
--@include pendingref
--@include unique
local T, id = ARGV[1], ARGV[2]
local copy = redis.call('HGET', KEYS[4], id)
if not copy then
  -- a task pending without a copy: still pending when its shard holds it
  local rank = redis.call('ZSCORE', T .. ':feed', id)
  if rank then copy = pending_lookup(T, {id}, {rank})[id] end
end
if not copy or redis.call('ZSCORE', KEYS[3], id) then return 0 end
local r, has = record_get(KEYS[2], id)
if has and r[1] ~= 'pending' then return 0 end
if redis.call('SADD', KEYS[1], id) == 0 then return 0 end
local unique = msg_unique(copy)
unique_release(T, unique, id, 'gone')
home_deleted(T, id, copy)
redis.call('HDEL', KEYS[4], id)
-- a record and message copy kept from an earlier attempt go now too
redis.call('HDEL', KEYS[2], id)
redis.call('HDEL', T .. ':msg', id)
return 1
