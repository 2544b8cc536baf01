--@include feed_trim_step
-- feed_insert adds members ranked first, first + 1, ... (ranks the caller
-- took from the counter) and trims the feed as feed_append says.
local function feed_insert(feed_key, members, first, cap)
  local n = #members
  local last = first + n - 1
  local zargs = {}
  for i = 1, n do
    zargs[#zargs + 1] = first + i - 1
    zargs[#zargs + 1] = members[i]
    if #zargs >= 1000 then
      redis.call('ZADD', feed_key, unpack(zargs))
      zargs = {}
    end
  end
  if #zargs > 0 then redis.call('ZADD', feed_key, unpack(zargs)) end
  local trimmed = {}
  if cap > 0 then
    local step = feed_trim_step(cap)
    if math.floor(last / step) ~= math.floor((first - 1) / step) then
      local over = redis.call('ZCARD', feed_key) - cap
      if over > 0 then
        trimmed = redis.call('ZRANGE', feed_key, 0, over - 1)
        redis.call('ZREMRANGEBYRANK', feed_key, 0, over - 1)
      end
    end
  end
  return first, trimmed
end
