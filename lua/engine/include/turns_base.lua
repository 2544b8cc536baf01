-- turns_base returns the first turn a new task may be placed in: the turn
-- now while its list is being taken, else the next.
local function turns_base(cur, pass)
  if pass > 0 then return cur + 1 end
  return cur
end
