#!lua flags=allow-oom
--[[ claim: finish a batch of acks, then lease what a blocking move put
  into a worker's in-flight list.
  KEYS[1] T:inflight:<worker>  KEYS[2] T:active  KEYS[3] T:msg  KEYS[4] T:state
  KEYS[5] T:paused  KEYS[6] T:first  KEYS[7] T:last  KEYS[8] T:limits
  KEYS[9] T:feed:msg  KEYS[10] T:done  KEYS[11] T:done:rank  KEYS[12] T:expire
  ARGV[1] T  ARGV[2] n  ARGV[3] lease (ms)  ARGV[4] now (ms, "" = server time)
  ARGV[5] worker ID  ARGV[6] shard size  ARGV[7] done feed cap
  ARGV[8] unused (pop's free slots: a claim leases for free slots only)
  ARGV[9..] acks, as pop's
  Takes up to n items, dropping dummies, under the same limits as pop.
  What may not start now goes back to the head of the pending list, so no
  worker hoards tasks it cannot run.
  Returns: {status, items left in the in-flight list, now (ms), {ack codes},
  {messages}, {index, attempt, token, id, granted, ...}}, as pop's (POP_RATE: the
  wait is not reported, look shortly). ]]
--@include acks
--@include lease
local T, size = ARGV[1], tonumber(ARGV[6])
local now = now_ms(ARGV[4])
local codes = ack_tasks(T, now, ARGV, 9, tonumber(ARGV[7]), size)
local want = tonumber(ARGV[2])
local n, status, lim = want, POP_OK, NO_LIMITS
-- neither paused nor limited, the common case, costs one call
if redis.call('EXISTS', KEYS[5], KEYS[8]) > 0 then
  if redis.call('EXISTS', KEYS[5]) == 1 then
    n, status = 0, POP_PAUSED
  else
    local _
    n, status, _, lim = dequeue_room(T, want, now, size)
  end
end
local msgs = {}
while #msgs < want do
  local got = redis.call('LPOP', KEYS[1], want - #msgs)
  if not got then break end
  for _, v in ipairs(got) do
    if v ~= DUMMY then msgs[#msgs + 1] = v end
  end
end
local left = redis.call('LLEN', KEYS[1])
local back = {}
for i = n + 1, #msgs do back[#back + 1] = msgs[i] end
back = fair_route(T, back, true, size)
if #back > 0 then sharded_push(KEYS[6], KEYS[7], T .. ':s:', size, back, true) end
if n == 0 then return {status, left, now, codes} end
local take = {}
for i = 1, math.min(n, #msgs) do take[#take + 1] = msgs[i] end
return dequeue_reply(T, take, lim, now, tonumber(ARGV[3]), ARGV[5], left, codes, size, false)
