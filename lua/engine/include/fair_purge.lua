--@include fair_layout
--@include fair_purge_lists
--@include turns_get
--@include turns_put
--@include turns_reached
--@include turns_clean
-- fair_purge takes up to n messages for an operator emptying a backlog:
-- the placed tasks first, turn by turn, then the keys' lists, the
-- busiest keys first (fair_purge_lists).
local function fair_purge(T, n)
  local out = {}
  local cur, popped, pass, live = turns_get(T)
  if live then
    local gone = 0
    for _ = 1, 64 do
      local want = n - #out
      if want <= 0 then break end
      local list = T .. ':fo:' .. cur
      local got = redis.call('LRANGE', list, 0, want - 1)
      if #got > 0 then redis.call('LTRIM', list, #got, -1) end
      popped = popped + #got
      for _, v in ipairs(got) do
        if string.byte(v, 1) == 0 then -- a marker ('\0')
          turns_reached(T, string.sub(v, 2), cur)
        else
          out[#out + 1] = v
          gone = gone + 1
        end
      end
      if #got < want then
        pass = 0
        if redis.call('EXISTS', T .. ':fo:' .. (cur + 1)) == 1 then
          turns_clean(T, cur)
          cur, popped = cur + 1, 0
        else
          if not turns_clean(T, cur) and redis.call('EXISTS', T .. ':fe') == 0 then
            redis.call('DEL', T .. ':fi')
            live = false
          end
          break
        end
      end
    end
    if gone > 0 then redis.call('INCRBY', T .. ':fn', -gone) end
    if live then turns_put(T, cur, popped, pass) end
  end
  for _, m in ipairs(fair_purge_lists(T, n - #out)) do out[#out + 1] = m end
  return out
end
