--@include codes
-- limits_get returns partition T's limits (include/limits.lua):
-- concurrency and rate, as NONE for no limit, since a quota of 0 is a
-- limit; per; keyconc and keyrate (0 = none).
local function limits_get(T)
  local v = redis.call('HMGET', T .. ':limits', 'concurrency', 'rate', 'per', 'keyconc', 'keyrate', 'cq', 'rq')
  local conc, rate = tonumber(v[1]) or 0, tonumber(v[2]) or 0
  if conc <= 0 then conc = NONE end
  if rate <= 0 then rate = NONE end
  if v[6] then conc = tonumber(v[6]) end
  if v[7] then rate = tonumber(v[7]) end
  return conc, rate, tonumber(v[3]) or 1000, tonumber(v[4]) or 0, tonumber(v[5]) or 0
end
