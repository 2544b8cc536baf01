--@include fair_layout
--@include fair_wake
-- fair_enter puts key at the ring's tail: its turn comes after every key
-- already there.
local function fair_enter(T, key)
  if redis.call('RPUSH', T .. ':fr', key) == 1 then fair_wake(T) end
end
