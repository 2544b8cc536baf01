-- TaskID claims (queue.TaskID, Config.IDTTL). A claim is a field of a
-- hash per time bucket and shard, T:ids:<width>:<bucket>:<shard>, not a
-- key of its own: a small hash is a listpack, far smaller per field than
-- a key, and a slot moves a few thousand keys however many IDs it claims
-- (BENCHMARKS.md, "Measured design choices"). A bucket is a quarter of
-- the claim's ttl wide, and its key expires ttl after the bucket ends: a
-- claim lives between ttl and 1.25 ttl, and a check reads 5 or 6 buckets.
-- Producers that differ in IDTTL keep their claims apart.
local CLAIM_SHARDS = 1024

-- claim_shard spreads IDs evenly over the shards, whatever they share.
local function claim_shard(id)
  return tonumber(string.sub(redis.sha1hex(id), 1, 3), 16) % CLAIM_SHARDS
end

-- claim_width is the bucket width of claims of ttl ms.
local function claim_width(ttl)
  return math.max(1, math.floor(ttl / 4))
end

-- claim_held reports whether id is claimed for ttl ms: in a bucket that
-- a claim made within ttl of now is in, or by the key of its own that
-- producers before 0.2 write (T:id:<id>). It returns the ID's shard too,
-- for claim_take.
local function claim_held(T, id, ttl, now)
  local shard = claim_shard(id)
  if redis.call('EXISTS', T .. ':id:' .. id) == 1 then return true, shard end
  local w = claim_width(ttl)
  local bucket, prefix, suffix = math.floor(now / w), T .. ':ids:' .. w .. ':', ':' .. shard
  for k = 0, math.ceil(ttl / w) do
    if redis.call('HEXISTS', prefix .. (bucket - k) .. suffix, id) == 1 then return true, shard end
  end
  return false, shard
end

-- claim_take claims id, of shard (claim_held), for ttl ms (to 1.25 ttl). expiries records the
-- bucket keys this call set an expiry on, so a batch sets each once.
local function claim_take(T, id, shard, ttl, now, expiries)
  local w = claim_width(ttl)
  local bucket = math.floor(now / w)
  local key = T .. ':ids:' .. w .. ':' .. bucket .. ':' .. shard
  redis.call('HSET', key, id, 1)
  if not expiries[key] then
    redis.call('PEXPIREAT', key, (bucket + 1) * w + ttl)
    expiries[key] = true
  end
end
