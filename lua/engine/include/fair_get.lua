--@include fair_layout
-- fair_get returns the first and last shard and the state of key, or nil
-- when key has no task waiting.
local function fair_get(T, key)
  local v = redis.call('HGET', T .. ':fk', key)
  if not v then return nil end
  local f, l, s = string.match(v, '^(-?%d+) (-?%d+) (%a)$')
  return tonumber(f), tonumber(l), s
end
