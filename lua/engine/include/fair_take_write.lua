--@include codes
--@include fair_layout
--@include fair_set
--@include fair_take_plain
--@include fair_take_key
-- fair_take_write carries out the plan c: it takes each key's tasks and
-- puts each key in its place, and changes the counters of every key in
-- one call each.
local function fair_take_write(c)
  local T, now = c.T, c.now
  local taken, held, backlog, gone = 0, 0, {}, {}
  for _, k in ipairs(c.ks) do
    local key = k.key
    if key == '' then
      fair_take_plain(c, k)
    elseif k.took > 0 then
      local n, h = fair_take_key(c, k, backlog)
      taken, held = taken + n, held + h
    elseif k.fate == 'b' or k.fate == 'p' or k.fate == 'w' then -- busy, paused or waiting
      fair_set(T, key, k.first, k.last, k.fate)
      held = held + k.avail
    end
    if k.fate == 'gone' and key ~= '' then
      gone[#gone + 1] = key
    elseif k.fate == 'w' then -- waiting
      redis.call('ZADD', T .. ':fd', k.due, key)
      if c.wait == NONE or k.due - now < c.wait then c.wait = math.max(1, k.due - now) end
    end
  end
  if taken > 0 then redis.call('INCRBY', T .. ':fn', -taken) end
  if held > 0 then redis.call('INCRBY', T .. ':fh', held) end
  for j = 1, #backlog, 1000 do redis.call('ZADD', T .. ':fz', unpack(backlog, j, math.min(#backlog, j + 999))) end
  for j = 1, #gone, 1000 do
    local to = math.min(#gone, j + 999)
    redis.call('ZREM', T .. ':fz', unpack(gone, j, to))
    redis.call('ZREM', T .. ':fl', unpack(gone, j, to))
    redis.call('HDEL', T .. ':fk', unpack(gone, j, to))
  end
end
