#!lua flags=allow-oom
--[[ quota_report: fence one partition T for a rebalance of epoch e and say
  what it holds and needs.
  KEYS[1] T:limits  KEYS[2] T:active  KEYS[3] T:ratelog  KEYS[4] T:first
  KEYS[5] T:last  KEYS[6] T:qepoch
  ARGV[1] epoch  ARGV[2] now (ms, "" = server time)  ARGV[3] per (ms)
  ARGV[4] T:s: (shard key prefix)  ARGV[5] shard size
  From here on the partition takes quota changes of epoch e only: a
  rebalance that stalled and lost its lock cannot raise a quota after a
  newer one has read it.
  Returns: {1, concurrency quota (NONE: none), rate quota (NONE: none),
  running (leases, expired ones included), starts within per, backlog (an
  estimate: the shards between the first and the last counted full, and
  the tasks waiting in their keys' lists, include/fair.lua)}, or {0} when
  a newer epoch was here first. ]]
--@include codes
--@include time
--@include sharded
local e = tonumber(ARGV[1])
if tonumber(redis.call('GET', KEYS[6]) or 0) > e then return {0} end
redis.call('SET', KEYS[6], e)
local v = redis.call('HMGET', KEYS[1], 'cq', 'rq')
local now = now_ms(ARGV[2])
local first, last = shard_bounds(KEYS[4], KEYS[5])
local backlog = redis.call('LLEN', ARGV[4] .. first)
if last > first then
  backlog = backlog + (last - first - 1) * tonumber(ARGV[5]) + redis.call('LLEN', ARGV[4] .. last)
end
backlog = backlog + tonumber(redis.call('GET', string.sub(ARGV[4], 1, -4) .. ':fn') or 0)
return {1, tonumber(v[1]) or NONE, tonumber(v[2]) or NONE,
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCOUNT', KEYS[3], now - tonumber(ARGV[3]), '+inf'),
  backlog}
