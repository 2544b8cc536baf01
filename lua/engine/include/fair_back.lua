--@include fair_layout
--@include fair_set
--@include fair_enter
-- fair_back brings a key out of the ring (state busy, paused or waiting)
-- back into it: its tasks are no longer held.
local function fair_back(T, key, first, last)
  if redis.call('HEXISTS', T .. ':fa', key) == 1 then
    -- tasks of it placed in turns (turns_place) are still to be reached,
    -- and its list's tasks come after them: its marker brings it into the
    -- in the ring
    fair_set(T, key, first, last, 'm') -- marked
  else
    fair_set(T, key, first, last, 'r') -- in the ring
    fair_enter(T, key)
  end
  redis.call('INCRBY', T .. ':fh', -tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
end
