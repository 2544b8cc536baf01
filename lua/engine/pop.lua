#!lua flags=allow-oom
--[[ pop: finish a batch of acks, then lease up to n pending tasks of
  partition T, within its limits.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:active  KEYS[4] T:msg
  KEYS[5] T:state  KEYS[6] T:paused  KEYS[7] T:limits  KEYS[8] T:feed:msg
  KEYS[9] T:done  KEYS[10] T:done:rank  KEYS[11] T:expire
  KEYS[12] T:fr  KEYS[13] T:fd: the keys in turn and those waiting for
    their GroupRate (include/fair.lua); a partition with either takes its
    tasks turn by turn
  ARGV[1] T  ARGV[2] n  ARGV[3] lease (ms)  ARGV[4] now (ms, "" = server time)
  ARGV[5] worker ID  ARGV[6] shard size  ARGV[7] done feed cap
  ARGV[8] the worker's free slots: n less the tasks it leases ahead of them
    (prefetch), which a partition with limits does not get
  ARGV[9..] acks, as ack's ARGV[5..] (none: ARGV[9] absent): they run first, so
  the slots and limits they free count at once and a busy worker pays one
  script call per batch.
  Limits are read from T:limits at every call (see include/limits.lua); a
  task leased ahead would hold a limit's room while it waits for a slot, so
  with limits a pop leases for the free slots only.
  Tasks with a group are taken by their keys' turns
  (include/fair.lua).
  Returns: {status, aux, now (ms: the lease's start), {ack codes},
  {messages}, {index, attempt, token, id, granted, ...}}: the leased
  messages, then five values for each of them whose attempt and token are not 1 or whose
  ID is not the one it opens with (see include/lease.lua); with nothing
  leased, the first four only. Status (include/codes.lua) POP_OK with aux
  the end shard (a reader that got nothing blocks there), POP_PAUSED,
  POP_FULL at the concurrency limit, POP_RATE at the rate limit with aux
  the ms to wait, POP_PARKED: nothing leased, but more may be leased at
  once (tasks of keys moved to their keys' lists, or keys the call did
  not reach: look again at once).
  Runs when Redis is out of memory, so full queues keep draining. ]]
--@include acks
--@include lease
local T, size = ARGV[1], tonumber(ARGV[6])
local now = now_ms(ARGV[4])
local codes = ack_tasks(T, now, ARGV, 9, tonumber(ARGV[7]), size)
local n, status, wait, lim = tonumber(ARGV[2]), POP_OK, 0, NO_LIMITS
local fair = false
-- neither paused, limited nor with tasks of keys, the common case, costs
-- one call
if redis.call('EXISTS', KEYS[6], KEYS[7], KEYS[12], KEYS[13], T .. ':fi') > 0 then
  if redis.call('EXISTS', KEYS[6]) == 1 then return {POP_PAUSED, 0, now, codes} end
  if redis.call('EXISTS', KEYS[7]) == 1 then
    n, status, wait, lim = dequeue_room(T, math.min(n, tonumber(ARGV[8])), now, size)
  end
  fair = redis.call('EXISTS', KEYS[12], KEYS[13], T .. ':fi') > 0
end
if n == 0 then return {status, wait, now, codes} end
if fair then
  local msgs, due, unreached = turns_lib().pop(T, n, lim, now, size)
  local shard = tonumber(redis.call('GET', KEYS[1]) or 0)
  if #msgs == 0 and unreached then return {POP_PARKED, 0, now, codes} end
  if #msgs == 0 and due ~= NONE then return {POP_RATE, due, now, codes} end
  return dequeue_reply(T, msgs, lim, now, tonumber(ARGV[3]), ARGV[5], shard, codes, size, true)
end
local msgs, shard = sharded_pop(KEYS[1], KEYS[2], T .. ':s:', n, true)
return dequeue_reply(T, msgs, lim, now, tonumber(ARGV[3]), ARGV[5], shard, codes, size, false)
