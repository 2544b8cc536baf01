--@include sharded
-- fair_plain_count returns the tasks in the partition's pending list. A
-- dummy that woke no reader (fair_wake's, or a blocked reader's helper's)
-- sits at the head: it is no task, or a turn of "" would take it alone.
local function fair_plain_count(T, size)
  local first, last = shard_bounds(T .. ':first', T .. ':last')
  local head = T .. ':s:' .. first
  local n = redis.call('LLEN', head)
  if n == 0 then
    if first == last then return 0 end
  else
    n = n - #redis.call('LPOS', head, DUMMY, 'COUNT', 0, 'MAXLEN', 16)
  end
  if last > first then
    n = n + (last - first - 1) * size + redis.call('LLEN', T .. ':s:' .. last)
  end
  return n
end
