-- unique_take takes the lock key for task id: for ttl ms when ttl > 0,
-- else until the task finishes and for -ttl - 1 ms after.
local function unique_take(T, key, id, ttl)
  local lock = T .. ':unique:' .. key
  if ttl > 0 then
    redis.call('SET', lock, id, 'PX', ttl)
    return
  end
  redis.call('SET', lock, id)
  if ttl < -1 then redis.call('HSET', T .. ':uafter', key, -ttl - 1) end
end
