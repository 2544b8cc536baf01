-- CLAIM_SHARDS: the hashes a bucket's claims are spread over.
local CLAIM_SHARDS = 1024

-- claim_shard spreads IDs evenly over the shards, whatever they share,
-- and returns the shard's digits: a number joined to a key name would be
-- formatted at every use.
local function claim_shard(id)
  return string.format('%d', tonumber(string.sub(redis.sha1hex(id), 1, 3), 16) % CLAIM_SHARDS)
end
