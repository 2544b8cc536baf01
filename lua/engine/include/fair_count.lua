--@include fair_layout
-- fair_count returns the tasks waiting in every key's shards, and how
-- many of them are held (their keys are out of the ring).
local function fair_count(T)
  local v = redis.call('MGET', T .. ':fn', T .. ':fh')
  return tonumber(v[1] or 0), math.max(0, tonumber(v[2] or 0))
end
