-- fair_shards_push pushes msgs into a key's shards at one end, rolling to
-- a new shard past size items, and returns the new first and last shards.
-- Read from that end, the messages come out in the order given.
local function fair_shards_push(prefix, first, last, size, msgs, left)
  if left then
    for i = #msgs, 1, -1 do
      if redis.call('LPUSH', prefix .. first, msgs[i]) > size then
        redis.call('LPOP', prefix .. first)
        first = first - 1
        redis.call('LPUSH', prefix .. first, msgs[i])
      end
    end
    return first, last
  end
  local i = 1
  while i <= #msgs do
    local room = size - redis.call('LLEN', prefix .. last)
    if room <= 0 then
      last = last + 1
      room = size
    end
    local j = math.min(#msgs, i + room - 1)
    redis.call('RPUSH', prefix .. last, unpack(msgs, i, j))
    i = j + 1
  end
  return first, last
end
