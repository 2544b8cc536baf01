--@include fair_layout
-- fair_forget drops key from every structure but what an operator set:
-- it has no task waiting any more.
local function fair_forget(T, key)
  redis.call('ZREM', T .. ':fz', key)
  redis.call('ZREM', T .. ':fl', key)
  redis.call('HDEL', T .. ':fk', key)
  redis.call('ZREM', T .. ':fd', key)
  redis.call('LREM', T .. ':fr', 0, key) -- an operator's purge: the ring's length
  local turn = redis.call('GET', T .. ':ft')
  if turn and string.match(turn, '^%d+ (.*)$') == key then redis.call('DEL', T .. ':ft') end
end
