--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_enter
-- turns_drop forgets the placed tasks of keys ks, all reached: their
-- records go. A key with no list leaves every structure but what an
-- operator set; a key whose list waited behind them (state marked) joins
-- the ring, or is held when paused.
local function turns_drop(T, ks)
  if #ks == 0 then return end
  local lists = redis.call('HMGET', T .. FAIR.lists, unpack(ks))
  redis.call('HDEL', T .. FAIR.placed, unpack(ks))
  redis.call('ZREM', T .. FAIR.ends, unpack(ks))
  if redis.call('EXISTS', T .. FAIR.trickle) == 1 then redis.call('HDEL', T .. FAIR.trickle, unpack(ks)) end
  local gone = {}
  for i, key in ipairs(ks) do
    if not lists[i] then
      gone[#gone + 1] = key
    elseif string.sub(lists[i], -1) == FAIR_STATE.marked then
      local first, last = fair_get(T, key)
      if redis.call('SISMEMBER', T .. FAIR.paused, key) == 1 then
        fair_set(T, key, first, last, FAIR_STATE.paused)
        redis.call('INCRBY', T .. FAIR.held, tonumber(redis.call('ZSCORE', T .. FAIR.sizes, key) or 0))
      else
        fair_set(T, key, first, last, FAIR_STATE.ring)
        fair_enter(T, key)
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', T .. FAIR.sizes, unpack(gone))
    redis.call('ZREM', T .. FAIR.names, unpack(gone))
  end
end
