#!lua flags=allow-oom
--[[ pop: lease up to n pending tasks of partition T, within its limit.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:active  KEYS[4] T:msg
  KEYS[5] T:state  KEYS[6] T:paused
  ARGV[1] T:s:  ARGV[2] n  ARGV[3] lease (ms)  ARGV[4] now (ms, "" = server time)
  ARGV[5] worker ID  ARGV[6] concurrency limit (0 = none)
  Returns: {status, end shard, id, message, attempt, token, ...}; status 0
  (tasks follow, or none: the list is empty and a reader should block on the
  end shard), 1 paused, 2 at the concurrency limit.
  Runs when Redis is out of memory, so full queues keep draining. ]]
--@include time
--@include sharded
--@include lease
if redis.call('EXISTS', KEYS[6]) == 1 then return {1, 0} end
local n = lease_room(KEYS[3], tonumber(ARGV[2]), tonumber(ARGV[6]))
if n == 0 then return {2, 0} end
local now = now_ms(ARGV[4])
local msgs, shard = sharded_pop(KEYS[1], KEYS[2], ARGV[1], n, true)
local out = {0, shard}
for _, v in ipairs(lease_tasks(KEYS[3], KEYS[4], KEYS[5], msgs, now, now + tonumber(ARGV[3]), ARGV[5])) do
  out[#out + 1] = v
end
return out
