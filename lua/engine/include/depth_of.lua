--@include shard_bounds
--@include fair_count
-- depth_of returns partition T's depth for shards of size items. A dummy
-- at the head makes it one too many, never too few.
local function depth_of(T, size)
  local first, last = shard_bounds(T .. ':first', T .. ':last')
  local n = redis.call('LLEN', T .. ':s:' .. first)
  if last > first then
    n = n + (last - first - 1) * size + redis.call('LLEN', T .. ':s:' .. last)
  end
  n = n - redis.call('SCARD', T .. ':tomb') -- deleted, not yet dropped by a dequeue
  n = n + tonumber(redis.call('GET', T .. ':parked') or 0) + fair_count(T)
  return math.max(0, n) + redis.call('ZCARD', T .. ':scheduled') + redis.call('ZCARD', T .. ':retry')
end
