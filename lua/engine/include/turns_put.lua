--@include fair_layout
-- turns_put records the turn now, the items taken from its list and the
-- ring turns left in it (T:fi), as turns_get reads them.
local function turns_put(T, cur, popped, pass)
  redis.call('SET', T .. ':fi', string.format('%d %d %d', cur, popped, pass))
end
