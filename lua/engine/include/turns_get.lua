--@include fair_layout
-- turns_get returns the turn now, the items taken from its list, the ring
-- turns left in it, and whether any task is placed (T:fi).
local function turns_get(T)
  local v = redis.call('GET', T .. ':fi')
  if not v then return 0, 0, 0, false end
  local c, p, s = string.match(v, '^(%d+) (%d+) (%d+)$')
  return tonumber(c), tonumber(p), tonumber(s), true
end
