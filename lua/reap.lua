#!lua flags=allow-oom
--[[ reap: give back what crashed or stalled workers held, and expire kept
  tasks. Any worker may run it, any number at once: every step is atomic.
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:first  KEYS[5] T:last
  KEYS[6] T:expire  KEYS[7] T:done
  ARGV[1] T  ARGV[2] now (ms, "" = server time)  ARGV[3] shard size  ARGV[4] max tasks per step
  ARGV[5..] IDs of dead workers, whose in-flight lists go back
  Expired leases and dead workers' in-flight items go to the head of the
  pending list (the attempt already counted stays counted); done tasks past
  their retention are deleted.
  Returns: {expired leases requeued, in-flight items returned, done tasks expired} ]]
--@include time
--@include sharded
--@include record
local T = ARGV[1]
local now = now_ms(ARGV[2])
local max = tonumber(ARGV[4])
local back = {}
local expired = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
for _, id in ipairs(expired) do
  local m = redis.call('HGET', KEYS[2], id)
  redis.call('ZREM', KEYS[1], id)
  if m then
    local r = record_get(KEYS[3], id)
    r[1], r[4], r[5] = 'pending', '', 'lease expired (worker crashed or stalled)'
    record_put(KEYS[3], id, r)
    redis.call('HDEL', KEYS[2], id)
    back[#back + 1] = m
  end
end
local returned = 0
for i = 5, #ARGV do
  local key = T .. ':inflight:' .. ARGV[i]
  local items = redis.call('LRANGE', key, 0, -1)
  redis.call('DEL', key)
  for _, v in ipairs(items) do
    if v ~= DUMMY then
      back[#back + 1] = v
      returned = returned + 1
    end
  end
end
if #back > 0 then sharded_push(KEYS[4], KEYS[5], T .. ':s:', tonumber(ARGV[3]), back, true) end
local gone = redis.call('ZRANGE', KEYS[6], '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
for _, id in ipairs(gone) do
  redis.call('ZREM', KEYS[6], id)
  redis.call('ZREM', KEYS[7], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
end
return {#back - returned, returned, #gone}
