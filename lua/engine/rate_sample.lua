#!lua flags=allow-oom
--[[ rate_sample: how many tasks partition T ever took in, now and about a
  window ago, so a reader gets the arrival rate with no write on the
  enqueue path: the feed's rank counter already counts every task enqueued.
  Readers (the autoscaling figure) keep the samples in T:rate, so any
  reader, in any process, finds the ones before it.
  KEYS[1] T:feed:rank  KEYS[2] T:rate (list of "ms:count", newest first)
  ARGV[1] now (ms, "" = server time)  ARGV[2] window (ms)
  Returns: {now ms, count now, then ms, count then}; then = now when no
  sample is old enough yet ]]
--@include time
--@include closed
local now = now_ms(ARGV[1])
local window = tonumber(ARGV[2])
local count = rank_count(redis.call('GET', KEYS[1])) -- a closed one's too
local samples = redis.call('LRANGE', KEYS[2], 0, -1)
local newest = samples[1] and tonumber(string.match(samples[1], '^(%d+):'))
-- a sample every tenth of a window is enough; more would only churn
if not newest or now - newest >= window / 10 then
  redis.call('LPUSH', KEYS[2], now .. ':' .. count)
  redis.call('LTRIM', KEYS[2], 0, 31)
  redis.call('PEXPIRE', KEYS[2], window * 4)
end
-- the oldest sample no older than twice the window; when readers came
-- rarely, the newest one older than a tenth of it (a rate over a longer
-- span is still the rate); else none
local then_ms, then_count = now, count
for i = #samples, 1, -1 do
  local t, c = string.match(samples[i], '^(%d+):(%d+)$')
  t, c = tonumber(t), tonumber(c)
  if t and now - t >= window / 10 and c <= count then
    then_ms, then_count = t, c
    if now - t <= window * 2 then break end
  end
end
return {now, count, then_ms, then_count}
