-- stats_add counts n events of kind in the current minute, for the
-- dashboard's history (each minute's counter expires after STATS_TTL
-- seconds), and in T:stats:<kind>:total, which never expires: the
-- monotonic counters Prometheus scrapes.
local STATS_TTL = 8 * 24 * 3600
local function stats_add(T, kind, now, n)
  if n <= 0 then return end
  local key = T .. ':stats:' .. kind .. ':' .. math.floor(now / 60000)
  -- only the call that creates the minute's counter sets its expiry
  if redis.call('INCRBY', key, n) == n then redis.call('EXPIRE', key, STATS_TTL) end
  redis.call('INCRBY', T .. ':stats:' .. kind .. ':total', n)
end
