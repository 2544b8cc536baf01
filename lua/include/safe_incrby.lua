-- safe_incrby adds n to the counter at key and returns the new value. A
-- missing counter is first restored to start, the caller's safe start point;
-- when there is none (start is nil) it returns nil, never a value counted from
-- zero by accident. It writes nothing in that case, so callers check first.
local function safe_incrby(key, n, start)
  if redis.call('EXISTS', key) == 0 then
    if start == nil then return nil end
    redis.call('SET', key, start)
  end
  return redis.call('INCRBY', key, n)
end
