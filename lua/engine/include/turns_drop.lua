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
  local lists = redis.call('HMGET', T .. ':fk', unpack(ks))
  redis.call('HDEL', T .. ':fa', unpack(ks))
  redis.call('ZREM', T .. ':fe', unpack(ks))
  if redis.call('EXISTS', T .. ':fx') == 1 then redis.call('HDEL', T .. ':fx', unpack(ks)) end
  local gone = {}
  for i, key in ipairs(ks) do
    if not lists[i] then
      gone[#gone + 1] = key
    elseif string.sub(lists[i], -1) == 'm' then -- marked
      local first, last = fair_get(T, key)
      if redis.call('SISMEMBER', T .. ':fp', key) == 1 then
        fair_set(T, key, first, last, 'p') -- paused
        redis.call('INCRBY', T .. ':fh', tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
      else
        fair_set(T, key, first, last, 'r') -- in the ring
        fair_enter(T, key)
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', T .. ':fz', unpack(gone))
    redis.call('ZREM', T .. ':fl', unpack(gone))
  end
end
