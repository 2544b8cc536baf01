--@include fair_layout
--@include fair_get
--@include fair_back
-- fair_resume brings a paused key back: into the ring when it has tasks
-- and left the ring while paused.
local function fair_resume(T, key)
  redis.call('SREM', T .. FAIR.paused, key)
  local first, last, state = fair_get(T, key)
  if state == FAIR_STATE.paused then fair_back(T, key, first, last) end
end
