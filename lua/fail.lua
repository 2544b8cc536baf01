#!lua flags=allow-oom
--[[ fail: record a batch of failed attempts: retry later, or dead.
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:feed:msg
  KEYS[5] T:retry  KEYS[6] T:dead  KEYS[7] T:dead:rank
  ARGV[1] T  ARGV[2] now (ms, "" = server time)  ARGV[3] dead feed cap
  ARGV[4] shard size  ARGV[5..] four fields per task: id, token, error text, retry delay (ms; -1 = dead)
  Only the token of the current lease counts, as in ack. Trimming the dead
  feed deletes the records of the tasks it drops.
  Returns: one code per task: 1 retry, 2 dead, 0 stale token ]]
--@include time
--@include limits
--@include feed
--@include stats
local now = now_ms(ARGV[2])
local codes, held = {}, {}
for i = 5, #ARGV, 4 do
  local r = record_held(KEYS[3], ARGV[i], ARGV[i + 1])
  held[#held + 1] = r or false
  codes[#codes + 1] = 0
end
local dead = {}
for k, r in ipairs(held) do
  if r then
    local i = 5 + (k - 1) * 4
    local id, err, delay = ARGV[i], ARGV[i + 2], tonumber(ARGV[i + 3])
    redis.call('ZREM', KEYS[1], id)
    key_release(ARGV[1], r[10], tonumber(ARGV[4]))
    r[10] = ''
    redis.call('HDEL', KEYS[4], id)
    r[5], r[6] = err, now
    if delay < 0 then
      r[1], r[8], r[9] = 'dead', now, 0
      dead[#dead + 1] = id
      codes[k] = 2
    else
      r[1], r[9] = 'retry', now + delay
      redis.call('ZADD', KEYS[5], now + delay, id)
      codes[k] = 1
    end
    record_put(KEYS[3], id, r)
  end
end
local _, trimmed = feed_append(KEYS[6], KEYS[7], dead, tonumber(ARGV[3]))
for _, id in ipairs(trimmed) do
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
end
local n = 0
for _, c in ipairs(codes) do if c > 0 then n = n + 1 end end
stats_add(ARGV[1], 'failed', now, n)
return codes
