--@include fair_layout
-- fair_take_ring writes the ring after the plan c: the head with the rest
-- of its turn, then the keys of the window that had no turn, then the
-- keys past the window, then the keys that had a turn, in the order of
-- their next ones.
local function fair_take_ring(c)
  local ring, ks, queue, head = c.T .. ':fr', c.ks, c.queue, c.head
  local unvisited, tail = {}, {}
  for i, k in ipairs(ks) do
    if k.fate == 'turn' and not c.visited[i] then unvisited[#unvisited + 1] = k.key end
  end
  for x = c.q, #queue do
    local i = queue[x]
    if c.visited[i] and ks[i].fate == 'turn' and not (head and head[1] == i) then tail[#tail + 1] = ks[i].key end
  end
  redis.call('LTRIM', ring, #c.keys, -1)
  for x = #unvisited, 1, -1 do redis.call('LPUSH', ring, unvisited[x]) end
  if head then
    redis.call('LPUSH', ring, ks[head[1]].key)
    redis.call('SET', c.T .. ':ft', head[2] .. ' ' .. ks[head[1]].key)
  else
    redis.call('DEL', c.T .. ':ft')
  end
  if #tail > 0 then redis.call('RPUSH', ring, unpack(tail)) end
end
