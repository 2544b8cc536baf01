--@include dummy
--@include shard_bounds
-- sharded_len counts the items of every shard between the end pointers,
-- less any dummy. A dummy is only ever pushed at the end a blocked reader
-- takes from, so it can only sit near the head of the first shard or the
-- tail of the last: looking at 16 items at each end finds it, in bounded time.
local function sharded_len(first_key, last_key, prefix)
  local first, last = shard_bounds(first_key, last_key)
  local total = 0
  for n = first, last do
    total = total + redis.call('LLEN', prefix .. n)
  end
  total = total - #redis.call('LPOS', prefix .. first, DUMMY, 'COUNT', 0, 'MAXLEN', 16)
  if last ~= first then
    total = total - #redis.call('LPOS', prefix .. last, DUMMY, 'RANK', -1, 'COUNT', 0, 'MAXLEN', 16)
  end
  return math.max(total, 0)
end
