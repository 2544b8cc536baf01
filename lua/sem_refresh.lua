#!lua flags=allow-oom
--[[ sem_refresh: extend a holder's slot, only while it still holds it.
  KEYS[1] the holders (zset holder -> expiry ms)
  ARGV[1] holder  ARGV[2] ttl (ms)  ARGV[3] now (ms, "" = server time)
  Returns: 1 refreshed, 0 not held (expired or released) ]]
--@include time
local now = now_ms(ARGV[3])
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not exp or tonumber(exp) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
