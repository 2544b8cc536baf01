#!lua flags=allow-oom
--[[ heartbeat: record that a worker process is alive, by server time, and
  list the workers whose heartbeat is older than stale_after.
  KEYS[1] <prefix>:workers (zset worker ID -> last heartbeat ms)
  ARGV[1] worker ID ("" = only list)  ARGV[2] stale after (ms)  ARGV[3] now (ms, "" = server time)
  Returns: the IDs of stale workers ]]
--@include time
local now = now_ms(ARGV[3])
if ARGV[1] ~= '' then redis.call('ZADD', KEYS[1], now, ARGV[1]) end
return redis.call('ZRANGE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[2])), 'BYSCORE', 'LIMIT', 0, 100)
