-- unique_release releases the lock key that task id holds, as the task
-- ends: how is 'done' (it succeeded), 'dead' or 'gone' (deleted or
-- purged). A lock another task holds now is left alone.
local function unique_release(T, key, id, how)
  if not key or key == '' then return end
  local lock = T .. ':unique:' .. key
  if redis.call('GET', lock) ~= id then return end
  if how ~= 'gone' and redis.call('PTTL', lock) >= 0 then
    -- a lock for a time: a success releases it, a dead task keeps it
    if how == 'done' then redis.call('DEL', lock) end
    return
  end
  local after = tonumber(redis.call('HGET', T .. ':uafter', key))
  if after then redis.call('HDEL', T .. ':uafter', key) end
  if how ~= 'gone' and after and after > 0 then
    redis.call('PEXPIRE', lock, after)
  else
    redis.call('DEL', lock)
  end
end
