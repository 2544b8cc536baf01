-- fair_read returns up to count messages from the head of shards
-- first..last of prefix, without taking them, and how many it read from
-- each shard.
local function fair_read(prefix, first, last, count)
  local out, per = {}, {}
  for n = first, last do
    if #out >= count then break end
    local got = redis.call('LRANGE', prefix .. n, 0, count - #out - 1)
    per[#per + 1] = #got
    for _, v in ipairs(got) do out[#out + 1] = v end
  end
  return out, per
end
