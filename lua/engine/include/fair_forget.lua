--@include fair_layout
-- fair_forget drops key from every structure but what an operator set:
-- it has no task waiting any more.
local function fair_forget(T, key)
  redis.call('ZREM', T .. FAIR.sizes, key)
  redis.call('ZREM', T .. FAIR.names, key)
  redis.call('HDEL', T .. FAIR.lists, key)
  redis.call('ZREM', T .. FAIR.due, key)
  redis.call('LREM', T .. FAIR.ring, 0, key) -- an operator's purge: the ring's length
  local turn = redis.call('GET', T .. FAIR.turn)
  if turn and string.match(turn, '^%d+ (.*)$') == key then redis.call('DEL', T .. FAIR.turn) end
end
