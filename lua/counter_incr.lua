#!lua
--[[ counter_incr: a safe counter. Add n to the counter; a missing counter is
  first restored from its safe start point, the highest score in KEYS[2].
  KEYS[1] the counter  KEYS[2] optional sorted set holding the start point
  ARGV[1] n
  Returns: the new value; nil when the counter is missing and there is no
  start point (nothing is written then) ]]
--@include counter
local start = nil
if KEYS[2] then start = zset_top_score(KEYS[2]) end
local v = safe_incrby(KEYS[1], tonumber(ARGV[1]), start)
if v == nil then return false end
return v
