--@include claim_buckets
-- claim_take claims id, of shard (claim_held), for ttl ms (to 1.5 ttl).
-- expiries records the bucket keys this call set an expiry on, so a
-- batch sets each once.
local function claim_take(T, id, shard, ttl, now, expiries, cache)
  local b = claim_buckets(T, ttl, now, cache)
  local key = b[1] .. shard
  redis.call('HSET', key, id, 1)
  if not expiries[key] then
    redis.call('PEXPIREAT', key, b.expiry)
    expiries[key] = true
  end
end
