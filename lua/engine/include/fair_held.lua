--@include fair_layout
-- fair_held reports whether a key in state s is out of the ring and held:
-- its tasks count as waiting, not pending.
local function fair_held(s)
  return s == FAIR_STATE.busy or s == FAIR_STATE.paused or s == FAIR_STATE.waiting
end
