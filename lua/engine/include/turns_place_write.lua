--@include fair_layout
--@include turns_call
--@include turns_pack
--@include turns_waiting
-- turns_place_write writes the placement p (turns_place_key's) in the turn
-- cur, popped items of it taken: one push per turn, and one write per
-- structure for every key placed.
local function turns_place_write(T, p, cur, popped)
  local offset = {}
  for _, r in ipairs(p.torder) do
    local list, len = p.turns[r], 0
    for j = 1, #list, 1000 do len = redis.call('RPUSH', T .. ':fo:' .. r, unpack(list, j, math.min(#list, j + 999))) end
    offset[r] = len - #list + (r == cur and popped or 0)
  end
  local arec, ends, counts, names = {}, {}, {}, {}
  for _, e in ipairs(p.placed) do
    local key, a, rest = e[1], e[2], e[3]
    for _, pos in ipairs(a.pos) do
      if pos[3] then pos[2], pos[3] = offset[pos[1]] + pos[2], nil end
    end
    arec[#arec + 1], arec[#arec + 2] = key, turns_pack(a, cur, popped)
    ends[#ends + 1], ends[#ends + 2] = a.lr, key
    names[#names + 1], names[#names + 2] = 0, key
    if rest == 0 then
      -- a key with no list: T:fz holds its placed count, for the order of Keys
      counts[#counts + 1], counts[#counts + 2] = turns_waiting(a, cur, popped), key
    end
  end
  turns_call('HSET', T .. ':fa', arec)
  turns_call('ZADD', T .. ':fe', ends)
  turns_call('ZADD', T .. ':fl', names)
  turns_call('ZADD', T .. ':fz', counts)
  redis.call('INCRBY', T .. ':fn', p.total)
end
