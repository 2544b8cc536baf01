-- sharded_push adds items at one end (left when left is true) so that, read
-- from that end, they come out in the order given. It rolls to a new shard
-- whenever the end shard is full and returns the new length of that end shard.
-- A tail push that fills its shard moves the tail pointer on at once, so the
-- tail shard always has room and one item (a single enqueue) costs GET and
-- RPUSH, not a length check before it. A tail push also returns its rolls,
-- {i, n, ...}: from item i on (#items + 1: the next push) items go to shard
-- n; none in the common case; whether the first item went into an empty
-- shard (where a blocked reader's move may take it); and the end pointer
-- after the push (for a tail push, the shard the next item goes to).
local function sharded_push(first_key, last_key, prefix, size, items, left)
  local ptr_key = left and first_key or last_key
  local n = tonumber(redis.call('GET', ptr_key) or 0)
  local rolls, empty = {}, false
  if not left and #items == 1 then
    local len = redis.call('RPUSH', prefix .. n, items[1])
    if len > size then
      -- the shard was full (a head push filled it): the item goes on to the next
      redis.call('RPOP', prefix .. n)
      n = n + 1
      redis.call('SET', ptr_key, n)
      rolls = {1, n}
      len = redis.call('RPUSH', prefix .. n, items[1])
    end
    if len >= size then
      n = n + 1
      redis.call('SET', ptr_key, n)
      rolls[#rolls + 1], rolls[#rolls + 2] = 2, n
    end
    return len, rolls, len == 1, n
  end
  local cmd = left and 'LPUSH' or 'RPUSH'
  local step = left and -1 or 1
  local seq = items
  if left then
    seq = {}
    for i = #items, 1, -1 do seq[#seq + 1] = items[i] end
  end
  local i, len = 1, 0
  while i <= #seq do
    local room = size - redis.call('LLEN', prefix .. n)
    if i == 1 then empty = room == size end
    if room <= 0 then
      n = n + step
      redis.call('SET', ptr_key, n)
      room = size
      if not left then rolls[#rolls + 1], rolls[#rolls + 2] = i, n end
    end
    local j = math.min(#seq, i + room - 1)
    len = redis.call(cmd, prefix .. n, unpack(seq, i, j))
    i = j + 1
  end
  if not left and len >= size then
    n = n + 1
    redis.call('SET', ptr_key, n)
    rolls[#rolls + 1], rolls[#rolls + 2] = #seq + 1, n
  end
  return len, rolls, empty, n
end
