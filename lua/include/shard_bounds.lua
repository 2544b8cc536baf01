-- shard_bounds returns the first and last shard numbers.
local function shard_bounds(first_key, last_key)
  return tonumber(redis.call('GET', first_key) or 0), tonumber(redis.call('GET', last_key) or 0)
end
