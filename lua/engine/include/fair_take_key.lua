--@include fair_layout
--@include fair_set
--@include msg_head
-- fair_take_key takes the tasks the plan c gave key k from its list,
-- counts them against its GroupRate, and records where its list starts and
-- its state; a key with tasks left adds its count to backlog (count, key,
-- ...). It returns the tasks taken and those left held (its key is out of
-- the ring).
local function fair_take_key(c, k, backlog)
  local T, key, lim, now = c.T, k.key, c.lim, c.now
  local items, f = {}, k.first
  if k.took == 1 then
    -- one task, the common turn: LPOP without a count answers it alone
    items[1] = redis.call('LPOP', k.head) or nil
  end
  while #items < k.took do
    local got = redis.call('LPOP', f == k.first and k.head or T .. ':fq:' .. key .. ':' .. f, string.format('%d', k.took - #items))
    if got then
      for _, v in ipairs(got) do items[#items + 1] = v end
    end
    if #items >= k.took or f >= k.last then break end
    f = f + 1 -- that shard is empty now
  end
  k.items = items
  c.leased[key] = (c.leased[key] or 0) + #items
  if lim.keyrate > 0 then
    local log = T .. ':kr:' .. key
    for _, m in ipairs(items) do
      redis.call('ZADD', log, now, msg_head(m) .. ':' .. now)
    end
    redis.call('PEXPIRE', log, lim.per)
  end
  local left, held = k.avail - #items, 0
  if left <= 0 then
    k.fate = 'gone'
    return #items, 0
  end
  backlog[#backlog + 1] = string.format('%d', left)
  backlog[#backlog + 1] = key
  if f < k.last and redis.call('EXISTS', T .. ':fq:' .. key .. ':' .. f) == 0 then f = f + 1 end
  local state = 'r' -- in the ring
  if k.fate == 'b' or k.fate == 'w' then -- busy or waiting
    state = k.fate
    held = left
  end
  if f ~= k.first or state ~= 'r' then fair_set(T, key, f, k.last, state) end -- in the ring
  return #items, held
end
