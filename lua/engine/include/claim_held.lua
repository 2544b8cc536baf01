--@include claim_shard
--@include claim_buckets
-- claim_held reports whether id is claimed for ttl ms: in a bucket that
-- a claim made within ttl of now is in, or by the key of its own that
-- producers before 0.2 write (T:id:<id>). It returns the ID's shard too,
-- for claim_take.
local function claim_held(T, id, ttl, now, cache)
  local shard = claim_shard(id)
  if redis.call('EXISTS', T .. ':id:' .. id) == 1 then return true, shard end
  for _, prefix in ipairs(claim_buckets(T, ttl, now, cache)) do
    if redis.call('HEXISTS', prefix .. shard, id) == 1 then return true, shard end
  end
  return false, shard
end
