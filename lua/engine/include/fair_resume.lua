--@include fair_layout
--@include fair_get
--@include fair_back
-- fair_resume brings a paused key back: into the ring when it has tasks
-- and left the ring while paused.
local function fair_resume(T, key)
  redis.call('SREM', T .. ':fp', key)
  local first, last, state = fair_get(T, key)
  if state == 'p' then fair_back(T, key, first, last) end -- paused
end
