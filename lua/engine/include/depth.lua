--@include sharded
--@include fair
-- A queue's depth is its tasks waiting to run: pending (those waiting in
-- their keys' lists and those parked by builds before fair queues
-- included), scheduled and retrying. Limits.MaxDepth caps it,
-- split over the queue's partitions. Reading it is O(1) whatever the
-- backlog: a pending list's middle shards are always full (pushes fill an
-- end shard before rolling to a new one and nothing removes from the
-- middle), so only its two end shards need an LLEN.

-- depth_max returns the queue's maximum depth from T:limits (0 = none).
local function depth_max(T)
  return tonumber(redis.call('HGET', T .. ':limits', 'maxdepth') or 0) or 0
end

-- depth_share returns partition part's share of max over parts partitions:
-- the shares add up to max exactly.
local function depth_share(max, part, parts)
  if parts <= 1 then return max end
  local share = math.floor(max / parts)
  if part < max % parts then share = share + 1 end
  return share
end

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
