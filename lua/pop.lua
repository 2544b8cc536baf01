#!lua flags=allow-oom
--[[ pop: lease up to n pending tasks of partition T, within its limits.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:active  KEYS[4] T:msg
  KEYS[5] T:state  KEYS[6] T:paused  KEYS[7] T:limits
  ARGV[1] T  ARGV[2] n  ARGV[3] lease (ms)  ARGV[4] now (ms, "" = server time)
  ARGV[5] worker ID  ARGV[6] shard size
  Limits are read from T:limits at every call (see include/limits.lua).
  Tasks over their concurrency key's limit are parked, not leased.
  Returns: {status, aux, now (ms: the lease's start), id, message, attempt, token, ...}; status 0 with
  aux the end shard (a reader that got nothing blocks there), 1 paused,
  2 at the concurrency limit, 3 at the rate limit with aux the ms to wait,
  4 nothing leased but tasks were parked (look again at once).
  Runs when Redis is out of memory, so full queues keep draining. ]]
--@include time
--@include lease
if redis.call('EXISTS', KEYS[6]) == 1 then return {1, 0} end
local T, size = ARGV[1], tonumber(ARGV[6])
local now = now_ms(ARGV[4])
local n, status, wait, lim = dequeue_room(T, tonumber(ARGV[2]), now, size)
if n == 0 then return {status, wait} end
local msgs, shard = sharded_pop(KEYS[1], KEYS[2], T .. ':s:', n, true)
return dequeue_reply(T, msgs, lim, now, tonumber(ARGV[3]), ARGV[5], shard)
