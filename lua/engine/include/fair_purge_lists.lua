--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_held
--@include fair_read
--@include fair_forget
-- fair_purge_lists takes up to n messages from the keys' lists, the busiest
-- keys first (100 keys a call at most), and returns them: an operator
-- empties a backlog. A key it empties leaves every structure.
local function fair_purge_lists(T, n)
  local out = {}
  if n <= 0 then return out end
  for _, key in ipairs(redis.call('ZRANGE', T .. ':fz', 0, 99, 'REV')) do
    if #out >= n then break end
    local first, last, state = fair_get(T, key)
    if first then
      local prefix = T .. ':fq:' .. key .. ':'
      local items, per = fair_read(prefix, first, last, n - #out)
      for j, c in ipairs(per) do
        if c > 0 then redis.call('LTRIM', prefix .. (first + j - 1), c, -1) end
      end
      for _, m in ipairs(items) do out[#out + 1] = m end
      redis.call('INCRBY', T .. ':fn', -#items)
      if fair_held(state) then redis.call('INCRBY', T .. ':fh', -#items) end
      if tonumber(redis.call('ZINCRBY', T .. ':fz', -#items, key)) <= 0 then
        fair_forget(T, key)
      else
        local f = first
        while f < last and redis.call('EXISTS', prefix .. f) == 0 do f = f + 1 end
        if f ~= first then fair_set(T, key, f, last, state) end
      end
    end
  end
  return out
end
