--@include codes
--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_back
-- fair_due brings the keys whose GroupRate lets them start again back into
-- the ring, and returns the ms until the next one may (NONE: none waits).
local function fair_due(T, now)
  local due = redis.call('ZRANGE', T .. ':fd', '-inf', now, 'BYSCORE', 'LIMIT', 0, 256)
  for _, key in ipairs(due) do
    redis.call('ZREM', T .. ':fd', key)
    local first, last, state = fair_get(T, key)
    if state == 'w' then -- waiting
      if redis.call('SISMEMBER', T .. ':fp', key) == 1 then
        fair_set(T, key, first, last, 'p') -- paused
      else
        fair_back(T, key, first, last)
      end
    end
  end
  local next = redis.call('ZRANGE', T .. ':fd', 0, 0, 'WITHSCORES')
  if #next == 0 then return NONE end
  return math.max(1, tonumber(next[2]) - now)
end
