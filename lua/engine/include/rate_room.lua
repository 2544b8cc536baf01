-- rate_room returns how many more tasks may start now under the rate
-- limit, or 0 and the ms until one may.
local function rate_room(T, rate, per, now)
  local log = T .. ':ratelog'
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - per)
  local used = redis.call('ZCARD', log)
  if used < rate then return rate - used, 0 end
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  return 0, math.max(1, tonumber(oldest[2]) + per - now)
end
