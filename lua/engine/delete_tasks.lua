#!lua
--[[ delete_tasks: delete scheduled, retrying, dead or done tasks.
  KEYS[1] T:scheduled  KEYS[2] T:retry  KEYS[3] T:dead  KEYS[4] T:done
  KEYS[5] T:msg  KEYS[6] T:state  KEYS[7] T:feed:msg  KEYS[8] T:expire
  ARGV[1] T  ARGV[2..] pairs: task ID, its unique key ("" = none)
  The task's message and record go; its entry in the recent feed stays, as
  for any task that left. A uniqueness lock the task holds is released.
  Pending and active tasks are not touched. A flow task's flow is told it
  is dead (include/home_deleted.lua).
  Returns: one code per task: 1 deleted, 0 not in those states ]]
--@include taskset
--@include home_deleted
--@include msg_head
--@include record
--@include keydepth
--@include unique
local T = ARGV[1]
local sets = {KEYS[1], KEYS[2], KEYS[3], KEYS[4]}
local codes = {}
for i = 2, #ARGV, 2 do
  local id, unique = ARGV[i], ARGV[i + 1]
  local which, key = task_set(sets, id)
  if which then
    unique_release(T, unique, id, 'gone')
    if which == 1 then
      -- a scheduled task that never ran leaves its key's depth
      local m = redis.call('HGET', KEYS[5], id)
      if m and record_get(KEYS[6], id)[2] == 0 then
        local _, k = msg_head(m)
        keydepth_down(T, k, 1)
      end
    end
    home_deleted(T, id, redis.call('HGET', KEYS[5], id))
    redis.call('ZREM', key, id)
    redis.call('ZREM', KEYS[8], id)
    redis.call('HDEL', KEYS[5], id)
    redis.call('HDEL', KEYS[6], id)
    redis.call('HDEL', KEYS[7], id)
    record_forget(T, {id})
  end
  codes[#codes + 1] = which and 1 or 0
end
return codes
