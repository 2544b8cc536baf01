#!lua flags=allow-oom
--[[ ack: finish a batch of tasks that succeeded.
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:feed:msg
  KEYS[5] T:done  KEYS[6] T:done:rank  KEYS[7] T:expire
  ARGV[1] T  ARGV[2] now (ms, "" = server time)  ARGV[3] done feed cap
  ARGV[4] shard size  ARGV[5..] four fields per task: id, token, retention (ms, 0 = not kept), unique key ("" = none)
  A task is finished only under the token of its current lease; a stale
  token (the lease was lost and the task handed to another worker) changes
  nothing. Tasks with a retention stay in the done feed until it passes (or
  the feed's cap trims them); the others leave no record.
  Returns: one code per task: 1 acked, 0 stale token or already finished ]]
--@include time
--@include limits
--@include feed
--@include stats
local T = ARGV[1]
local now = now_ms(ARGV[2])
local ids, tokens = {}, {}
for i = 5, #ARGV, 4 do
  ids[#ids + 1] = ARGV[i]
  tokens[#tokens + 1] = ARGV[i + 1]
end
local held = records_held(KEYS[3], ids, tokens)
local codes, done, gone, kept, keptStates, expiries = {}, {}, {}, {}, {}, {}
for k, r in ipairs(held) do
  codes[k] = r and 1 or 0
  if r then
    local i = 5 + (k - 1) * 4
    local id, retention, unique = ids[k], tonumber(ARGV[i + 2]), ARGV[i + 3]
    done[#done + 1] = id
    key_release(T, r[10], tonumber(ARGV[4]))
    if retention > 0 then
      r[1], r[8], r[10] = 'done', now, ''
      keptStates[#keptStates + 1] = id
      keptStates[#keptStates + 1] = cmsgpack.pack(r)
      expiries[#expiries + 1] = now + retention
      expiries[#expiries + 1] = id
      kept[#kept + 1] = id
    else
      gone[#gone + 1] = id
    end
    if unique ~= '' and redis.call('GET', T .. ':unique:' .. unique) == id then
      redis.call('DEL', T .. ':unique:' .. unique)
    end
  end
end
if #done > 0 then
  redis.call('ZREM', KEYS[1], unpack(done))
  redis.call('HDEL', KEYS[4], unpack(done))
end
if #gone > 0 then
  redis.call('HDEL', KEYS[2], unpack(gone))
  redis.call('HDEL', KEYS[3], unpack(gone))
end
if #kept > 0 then
  redis.call('HSET', KEYS[3], unpack(keptStates))
  redis.call('ZADD', KEYS[7], unpack(expiries))
end
local _, trimmed = feed_append(KEYS[5], KEYS[6], kept, tonumber(ARGV[3]))
for _, id in ipairs(trimmed) do
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', KEYS[7], id)
end
stats_add(T, 'done', now, #done)
return codes
