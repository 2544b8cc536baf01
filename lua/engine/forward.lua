#!lua flags=allow-oom
--[[ forward: move due scheduled and retrying tasks to the tail of the
  pending list. Any worker may run it, any number at once.
  KEYS[1] T:scheduled  KEYS[2] T:retry  KEYS[3] T:msg  KEYS[4] T:state
  KEYS[5] T:first  KEYS[6] T:last
  KEYS[7] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T:s:  ARGV[2] now (ms, "" = server time)  ARGV[3] shard size  ARGV[4] max per set
  A task that never ran loses its record and message copy (pending tasks
  need neither); a retrying one keeps both, so inspectors still find it
  with its attempts and last error while it waits in the list.
  Returns: {tasks moved, ms until the next due task (NONE: none)} ]]
--@include codes
--@include time
--@include sharded
--@include record
--@include fair
local now = now_ms(ARGV[2])
local max = tonumber(ARGV[4])
local msgs = {}
for s = 1, 2 do
  local ids = redis.call('ZRANGE', KEYS[s], '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
  for _, id in ipairs(ids) do
    redis.call('ZREM', KEYS[s], id)
    local m = redis.call('HGET', KEYS[3], id)
    if m then
      msgs[#msgs + 1] = m
      local r = record_get(KEYS[4], id)
      if r[2] == 0 then
        redis.call('HDEL', KEYS[3], id)
        redis.call('HDEL', KEYS[4], id)
      else
        r[1], r[9] = 'pending', 0
        record_put(KEYS[4], id, r)
      end
    end
  end
end
-- a task with a key goes back to its key's tasks (include/fair.lua)
local T = string.sub(ARGV[1], 1, -4) -- T:s: less ':s:'
msgs = fair_route(T, msgs, false, tonumber(ARGV[3]))
if #msgs > 0 then sharded_push(KEYS[5], KEYS[6], ARGV[1], tonumber(ARGV[3]), msgs, false) end
local next_due = NONE
for s = 1, 2 do
  local top = redis.call('ZRANGE', KEYS[s], 0, 0, 'WITHSCORES')
  if #top > 0 then
    local d = math.max(0, tonumber(top[2]) - now)
    if next_due == NONE or d < next_due then next_due = d end
  end
end
return {#msgs, next_due}
