#!lua
--[[ sem_acquire: take a slot of a fair semaphore (Redis in Action 11.2.3).
  Expired holders are dropped first; a slot is taken only while fewer than
  limit holders remain. A holder that already holds its slot refreshes it.
  Server time decides expiry, so client clocks cannot skew fairness.
  KEYS[1] the holders (zset holder -> expiry ms)
  ARGV[1] holder  ARGV[2] limit  ARGV[3] ttl (ms)  ARGV[4] now (ms, "" = server time)
  Returns: 1 acquired, 0 full ]]
--@include time
local now = now_ms(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not held and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
