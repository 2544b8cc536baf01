#!lua flags=allow-oom
--[[ quota_set: set one partition T's share of its queue's fleet-wide
  limits, for the rebalance of epoch e.
  KEYS[1] T:limits  KEYS[2] T:active  KEYS[3] T:ratelog  KEYS[4] T:qepoch
  ARGV[1] epoch  ARGV[2] now (ms, "" = server time)  ARGV[3] per (ms)
  ARGV[4] concurrency quota  ARGV[5] rate quota (each: a number, "" to
    leave it, "-" to remove it: no limit of that kind)
  A quota never goes below what the partition uses now (tasks running,
  starts within per): running tasks are not taken back, so a shrink takes
  effect as they finish. pop and claim read cq and rq (include/limits.lua).
  Returns: {1, concurrency quota (NONE: none), rate quota (NONE: none)} as
  set, or {0} when the partition was fenced by another epoch. ]]
--@include codes
--@include time
local e = tonumber(ARGV[1])
if tonumber(redis.call('GET', KEYS[4]) or 0) ~= e then return {0} end
local now = now_ms(ARGV[2])
local function put(field, want, used)
  if want == '' then return tonumber(redis.call('HGET', KEYS[1], field) or NONE) end
  if want == '-' then
    redis.call('HDEL', KEYS[1], field)
    return NONE
  end
  local q = math.max(tonumber(want), used())
  redis.call('HSET', KEYS[1], field, q)
  return q
end
local cq = put('cq', ARGV[4], function() return redis.call('ZCARD', KEYS[2]) end)
local rq = put('rq', ARGV[5], function()
  return redis.call('ZCOUNT', KEYS[3], now - tonumber(ARGV[3]), '+inf')
end)
return {1, cq, rq}
