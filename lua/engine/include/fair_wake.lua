--@include dummy
-- fair_wake wakes a worker blocked on the partition's pending list: its
-- blocking move waits on the head shard, which holds nothing when one
-- waits there, so a dummy in an empty head shard is all it takes, and a
-- head shard that holds anything needs none.
local function fair_wake(T)
  local head = T .. ':s:' .. tonumber(redis.call('GET', T .. ':first') or 0)
  if redis.call('LLEN', head) == 0 then redis.call('LPUSH', head, DUMMY) end
end
