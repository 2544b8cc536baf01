#!lua flags=allow-oom
--[[ fail: record a batch of failed attempts: retry later, or dead.
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:feed:msg
  KEYS[5] T:retry  KEYS[6] T:dead  KEYS[7] T:dead:rank  KEYS[8] T:scheduled
  ARGV[1] T  ARGV[2] now (ms, "" = server time)  ARGV[3] dead feed cap
  ARGV[4] shard size  ARGV[5..] five fields per task: id, token, error text,
    retry delay (ms; NONE: dead), snooze (1: back after the delay without
    counting the attempt or recording an error: scheduled, as a task
    enqueued with a delay waits, not retrying)
  Only the token of the current lease counts, as in ack. A flow task that
  goes dead is reported in T:notify (wire.FlowNote), as ack reports
  success. A task gone dead releases a uniqueness lock held until it
  finished (include/unique.lua). Trimming the dead feed deletes the records of the tasks it drops,
  with their progress, result and steps.
  Returns: one code per task (include/codes.lua): FAIL_RETRY, FAIL_DEAD,
  FAIL_SNOOZED, or FAIL_STALE: a stale token ]]
--@include codes
--@include time
--@include limits
--@include feed
--@include stats
--@include msg_unique
--@include msg_flow
--@include unique
local now = now_ms(ARGV[2])
local codes, held = {}, {}
for i = 5, #ARGV, 5 do
  local r = record_held(KEYS[3], ARGV[i], ARGV[i + 1])
  held[#held + 1] = r or false
  codes[#codes + 1] = FAIL_STALE
end
local dead = {}
for k, r in ipairs(held) do
  if r then
    local i = 5 + (k - 1) * 5
    local id, err, delay, snooze = ARGV[i], ARGV[i + 2], tonumber(ARGV[i + 3]), ARGV[i + 4] == '1'
    redis.call('ZREM', KEYS[1], id)
    key_release(ARGV[1], r[10], tonumber(ARGV[4]))
    r[10] = ''
    redis.call('HDEL', KEYS[4], id)
    if snooze then
      r[1], r[2], r[9] = 'scheduled', math.max(0, r[2] - 1), now + math.max(delay, 0)
      redis.call('ZADD', KEYS[8], r[9], id)
      codes[k] = FAIL_SNOOZED
    elseif delay < 0 then -- NONE: no retry
      r[5], r[6] = err, now
      r[1], r[8], r[9] = 'dead', now, 0
      dead[#dead + 1] = id
      codes[k] = FAIL_DEAD
      local m = redis.call('HGET', KEYS[2], id)
      unique_release(ARGV[1], m and msg_unique(m), id, 'dead')
      local flow = msg_flow(m)
      if flow ~= '' then
        redis.call('RPUSH', ARGV[1] .. ':notify', cmsgpack.pack({flow, id, 'd', '', err}))
      end
    else
      r[5], r[6] = err, now
      r[1], r[9] = 'retry', now + delay
      redis.call('ZADD', KEYS[5], now + delay, id)
      codes[k] = FAIL_RETRY
    end
    record_put(KEYS[3], id, r)
  end
end
local _, trimmed = feed_append(KEYS[6], KEYS[7], dead, tonumber(ARGV[3]))
for _, id in ipairs(trimmed) do
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
end
record_forget(ARGV[1], trimmed)
local n = 0
for _, c in ipairs(codes) do if c == FAIL_RETRY or c == FAIL_DEAD then n = n + 1 end end
stats_add(ARGV[1], 'failed', now, n)
return codes
