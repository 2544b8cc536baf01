--@include fair_layout
--@include fair_plain_count
--@include fair_take_limits
-- fair_take_load reads the ring's next count keys into the plan c: what
-- each may give, and which may not start now. An entry's fate is "turn"
-- while it may take turns, "gone" once it has no task left, or a state
-- (a letter of fair_layout) it leaves the ring in. It returns false at the ring's end.
local function fair_take_load(c, count)
  local T, keys = c.T, c.keys
  local from = #keys
  local got = redis.call('LRANGE', T .. ':fr', from, from + count - 1)
  if #got == 0 then return false end
  local recs = redis.call('HMGET', T .. ':fk', unpack(got))
  local avail = redis.call('ZMSCORE', T .. ':fz', unpack(got))
  local weights = redis.call('EXISTS', T .. ':fw') == 1 and redis.call('HMGET', T .. ':fw', unpack(got)) or {}
  local stops = redis.call('EXISTS', T .. ':fp') == 1 and redis.call('SMISMEMBER', T .. ':fp', unpack(got)) or {}
  local running = c.lim.keyconc > 0 and redis.call('HMGET', T .. ':keyactive', unpack(got)) or {}
  for j, key in ipairs(got) do
    local i = from + j
    keys[i] = key
    local w = weights[j]
    -- every field a key may get, set here: a table sized once
    local k = {key = key, took = 0, fate = 'turn', weight = w and math.max(1, tonumber(w) or 1) or 1,
      avail = 0, room = 0, first = 0, last = 0, head = false, items = false, next = 1,
      ratebound = false, due = false}
    c.ks[i] = k
    if key == '' then
      k.avail = fair_plain_count(T, c.size)
      k.room = math.huge
    elseif not recs[j] then
      k.fate = 'gone'
    else
      fair_take_limits(c, k, recs[j], avail[j], stops[j] == 1, running[j])
    end
    if k.fate == 'turn' and k.avail <= 0 then k.fate = 'gone' end
    if k.fate == 'turn' then c.queue[#c.queue + 1] = i end
  end
  return #got == count
end
