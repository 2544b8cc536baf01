--@include fair_layout
-- turns_mark puts key's marker after its last placed task, once.
local function turns_mark(T, key, a)
  if a.mk then return end
  redis.call('RPUSH', T .. ':fo:' .. a.lr, '\0' .. key)
  a.mk = true
end
