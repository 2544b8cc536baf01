--@include fair_layout
-- fair_held reports whether a key in state s is out of the ring and held:
-- its tasks count as waiting, not pending.
local function fair_held(s)
  return s == 'b' or s == 'p' or s == 'w' -- busy, paused or waiting
end
