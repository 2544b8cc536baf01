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
