#!lua flags=allow-oom
--[[ reap: give back what crashed or stalled workers held, and expire kept
  tasks. Any worker may run it, any number at once: every step is atomic.
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:first  KEYS[5] T:last
  KEYS[6] T:expire  KEYS[7] T:done
  KEYS[8] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T  ARGV[2] now (ms, "" = server time)  ARGV[3] shard size  ARGV[4] max tasks per step
  ARGV[5..] IDs of dead workers, whose in-flight lists go back
  Expired leases and dead workers' in-flight items go to the head of the
  pending list (the attempt already counted stays counted); done tasks past
  their retention are deleted.
  Returns: {expired leases requeued, in-flight items returned, done tasks expired} ]]
--@include time
--@include limits
local T = ARGV[1]
local now = now_ms(ARGV[2])
local max = tonumber(ARGV[4])
local requeued = requeue_expired(T, now, max, tonumber(ARGV[3]))
local back = {}
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
back = fair_route(T, back, true, tonumber(ARGV[3]))
if #back > 0 then sharded_push(KEYS[4], KEYS[5], T .. ':s:', tonumber(ARGV[3]), back, true) end
local gone = redis.call('ZRANGE', KEYS[6], '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
for _, id in ipairs(gone) do
  redis.call('ZREM', KEYS[6], id)
  redis.call('ZREM', KEYS[7], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  record_forget(T, {id})
end
return {requeued, returned, #gone}
