-- depth_max returns the queue's maximum depth from T:limits (0 = none).
local function depth_max(T)
  return tonumber(redis.call('HGET', T .. ':limits', 'maxdepth') or 0) or 0
end
