-- TaskID claims (queue.TaskID, Config.IDTTL). A claim is a field of a
-- hash per time bucket and shard, T:ids:<width>:<bucket>:<shard>, not a
-- key of its own: a small hash is a listpack, far smaller per field than
-- a key, and a slot moves a few thousand keys however many IDs it claims
-- (BENCHMARKS.md, "Measured design choices"). A bucket is half the
-- claim's ttl wide, and its key expires ttl after the bucket ends: a
-- claim lives between ttl and 1.5 ttl, and a check reads 3 buckets, each
-- one call, so a narrower bucket would cost every claimed enqueue a call
-- more. Producers that differ in IDTTL keep their claims apart.
local CLAIM_SHARDS = 1024

-- claim_shard spreads IDs evenly over the shards, whatever they share,
-- and returns the shard's digits: a number joined to a key name would be
-- formatted at every use.
local function claim_shard(id)
  return string.format('%d', tonumber(string.sub(redis.sha1hex(id), 1, 3), 16) % CLAIM_SHARDS)
end

-- claim_buckets returns, for claims of ttl ms at now, the key prefixes of
-- the buckets a claim made within ttl is in, the current one first, and
-- the current bucket's expiry (ms), once per call and ttl (cache).
local function claim_buckets(T, ttl, now, cache)
  local b = cache[ttl]
  if b then return b end
  local w = math.max(1, math.floor(ttl / 2))
  local bucket = math.floor(now / w)
  b = {expiry = string.format('%d', (bucket + 1) * w + ttl)}
  for k = 0, math.ceil(ttl / w) do
    b[k + 1] = string.format('%s:ids:%d:%d:', T, w, bucket - k)
  end
  cache[ttl] = b
  return b
end

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
