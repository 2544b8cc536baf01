#!lua flags=allow-oom
--[[ requeue: give running tasks back to the head of the pending list
  without costing an attempt (graceful shutdown ran out of time).
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:first  KEYS[5] T:last
  KEYS[6] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T  ARGV[2] shard size  ARGV[3..] pairs: id, token
  Returns: one code per task: 1 requeued, 0 stale token ]]
--@include limits
local codes, msgs = {}, {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local r = record_held(KEYS[3], id, ARGV[i + 1])
  local m = r and redis.call('HGET', KEYS[2], id)
  if m then
    local key = r[10]
    r[1], r[2], r[4], r[10] = 'pending', math.max(0, r[2] - 1), '', ''
    record_put(KEYS[3], id, r)
    key_release(ARGV[1], key, tonumber(ARGV[2]))
    redis.call('ZREM', KEYS[1], id) -- its message stays in T:msg, for inspectors
    msgs[#msgs + 1] = m
    codes[#codes + 1] = 1
  else
    codes[#codes + 1] = 0
  end
end
-- a task with a key goes back to the head of its key's tasks
msgs = fair_route(ARGV[1], msgs, true, tonumber(ARGV[2]))
if #msgs > 0 then sharded_push(KEYS[4], KEYS[5], ARGV[1] .. ':s:', tonumber(ARGV[2]), msgs, true) end
return codes
