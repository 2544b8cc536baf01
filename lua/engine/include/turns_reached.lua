--@include fair_layout
--@include turns_rec
--@include turns_drop
-- turns_reached: key's marker was reached in turn cur, so was every task
-- of it placed in turns, unless it was placed again since (a later turn
-- holds its marker, if it has one).
local function turns_reached(T, key, cur)
  local a = turns_rec(redis.call('HGET', T .. ':fa', key))
  if a and a.lr > cur then return end
  turns_drop(T, {key})
end
