#!lua flags=allow-oom
--[[ purge_pending: delete up to n pending tasks from the head of
  partition T's list (an operator emptying a backlog).
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:msg  KEYS[4] T:state
  KEYS[5] T:feed:msg
  KEYS[6] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T  ARGV[2] n
  Each task's message goes with its list item; a record and message copy
  it kept from an earlier attempt go too, and so does a uniqueness lock it
  holds. Its entry in the recent feed stays, as for any task that left. A
  flow task's flow is told it is dead (include/home_deleted.lua).
  When the pending list is empty, tasks waiting in their keys' lists go,
  the busiest keys first (include/fair.lua). Tasks a worker has already
  moved to its in-flight list, and tasks parked by builds before fair
  queues, are not touched.
  Runs when Redis is out of memory: deleting is how a full Redis recovers.
  Returns: how many tasks were deleted ]]
--@include sharded
--@include msg_unique
--@include home_deleted
--@include record
--@include keydepth
--@include fair
--@include unique
local T = ARGV[1]
local msgs = sharded_pop(KEYS[1], KEYS[2], T .. ':s:', tonumber(ARGV[2]), true)
for _, m in ipairs(turns_lib().purge(T, tonumber(ARGV[2]) - #msgs)) do msgs[#msgs + 1] = m end
for _, m in ipairs(msgs) do
  local id, key = msg_head(m)
  if key ~= '' and record_get(KEYS[4], id)[2] == 0 then keydepth_down(T, key, 1) end
  local unique = msg_unique(m)
  unique_release(T, unique, id, 'gone')
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  redis.call('HDEL', KEYS[5], id)
  record_forget(T, {id})
  redis.call('SREM', T .. ':tomb', id)
  home_deleted(T, id, m)
end
return #msgs
