-- Uniqueness locks. T:unique:<key> holds the ID of the task that took
-- it, in one of two kinds:
--   for a time (queue.Unique, UniqueBy): it expires after its ttl, and
--     the task's success releases it earlier;
--   until the task finishes (queue.UniqueUntilFinished): no expiry while
--     the task waits or runs; when it finishes, done or dead, the lock
--     goes, or stays for the time T:uafter gives (key -> ms).
-- Deleting or purging the task releases either kind at once.

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
