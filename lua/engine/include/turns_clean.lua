--@include fair_layout
--@include turns_drop
-- turns_clean forgets up to 1,000 keys whose last placed task was in a
-- turn up to upto, all taken: a key left no record after its last task.
-- It returns whether any such key is left.
local function turns_clean(T, upto)
  local ks = redis.call('ZRANGE', T .. ':fe', '-inf', upto, 'BYSCORE', 'LIMIT', 0, 1000)
  turns_drop(T, ks)
  return #ks == 1000
end
